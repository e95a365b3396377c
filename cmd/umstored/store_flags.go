package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"umstore/internal/cli"

	"umstore/storegroup"
	"umstore/storehost"
)

// addRetentionFlags declares the retention flags shared by run and dev.
func addRetentionFlags(fs *pflag.FlagSet, o *storehost.Options) {
	def := storegroup.DefaultConfig()
	fs.Uint64Var(&o.RetentionMaxBytes, "retention-max-bytes", def.RetentionMaxBytes, "per source: keep at most this many payload bytes, oldest released first (UM repository-disk-file-size-limit; 0: no limit)")
	fs.Uint64Var(&o.RetentionMaxMessages, "retention-max-messages", def.RetentionMaxMessages, "per source: keep at most this many messages (0: no limit)")
	fs.DurationVar(&o.RetentionMaxAge, "retention-max-age", def.RetentionMaxAge, "per source: release messages older than this (0: no limit)")
	fs.IntVar(&o.RepairBytesPerSecond, "repair-rate", def.RepairBytesPerSecond, "intergroup repair copies at most this many payload bytes per second, so live publishing keeps priority")
	fs.DurationVar(&o.SourceActivityTimeout, "source-activity-timeout", def.SourceActivityTimeout, "free a source for a new publisher after its publisher has been silent this long (UM source-activity-timeout)")
	fs.DurationVar(&o.ReceiverActivityTimeout, "receiver-activity-timeout", def.ReceiverActivityTimeout, "expire a named receiver silent this long: its name may be taken over and it holds no paced source back; its position is kept (UM receiver-activity-timeout)")
	fs.DurationVar(&o.ReceiverStateLifetime, "receiver-state-lifetime", def.ReceiverStateLifetime, "forget a named receiver's position once it has been silent this long (UM receiver-state-lifetime; 0: keep it, unlike UM, whose 0 forgets it at the activity timeout)")
	fs.BoolVar(&o.AllowReceiverPacedPersistence, "allow-receiver-paced-persistence", false, "let publishers ask for receiver-paced persistence: a paced source keeps its messages until its paced receivers consumed them, within the retention limits (UM repository-allow-receiver-paced-persistence)")
}

// applyReceiverFlags copies into opts the receiver flags, which are not
// part of the deployment's policy (so a daemon's value is its own and no
// leader compares it): --receiver-activity-timeout,
// --receiver-state-lifetime and --allow-receiver-paced-persistence.
func applyReceiverFlags(flags storehost.Options, opts *storehost.Options) {
	opts.ReceiverActivityTimeout = flags.ReceiverActivityTimeout
	opts.ReceiverStateLifetime = flags.ReceiverStateLifetime
	opts.AllowReceiverPacedPersistence = flags.AllowReceiverPacedPersistence
}

// policyFlags are the flags that override a value of the deployment's
// policy, and how each is copied from the parsed flags into the options.
var policyFlags = []struct {
	name string
	copy func(from storehost.Options, to *storehost.Options) (value, file any)
}{
	{"retention-max-bytes", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.RetentionMaxBytes
		o.RetentionMaxBytes = f.RetentionMaxBytes
		return f.RetentionMaxBytes, old
	}},
	{"retention-max-messages", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.RetentionMaxMessages
		o.RetentionMaxMessages = f.RetentionMaxMessages
		return f.RetentionMaxMessages, old
	}},
	{"retention-max-age", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.RetentionMaxAge
		o.RetentionMaxAge = f.RetentionMaxAge
		return f.RetentionMaxAge, old
	}},
	{"repair-rate", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.RepairBytesPerSecond
		o.RepairBytesPerSecond = f.RepairBytesPerSecond
		return f.RepairBytesPerSecond, old
	}},
	{"source-activity-timeout", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.SourceActivityTimeout
		o.SourceActivityTimeout = f.SourceActivityTimeout
		return f.SourceActivityTimeout, old
	}},
	{"snapshot-threshold", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.SnapshotThreshold
		o.SnapshotThreshold = f.SnapshotThreshold
		return f.SnapshotThreshold, old
	}},
	{"snapshot-interval", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.SnapshotInterval
		o.SnapshotInterval = f.SnapshotInterval
		return f.SnapshotInterval, old
	}},
	{"trailing-logs", func(f storehost.Options, o *storehost.Options) (any, any) {
		old := o.TrailingLogs
		o.TrailingLogs = f.TrailingLogs
		return f.TrailingLogs, old
	}},
}

// overridePolicy copies into opts (the deployment's policy) the value of
// every policy flag given on the command line, warning about each: the
// daemon's stores then run another policy than the rest of their groups.
func overridePolicy(fs *pflag.FlagSet, flags storehost.Options, opts *storehost.Options, log *slog.Logger) {
	for _, f := range policyFlags {
		if fs.Changed(f.name) {
			v, file := f.copy(flags, opts)
			warnOverride(log, f.name, v, file)
		}
	}
}

// warnOverride warns that a flag overrides the deployment's policy.
func warnOverride(log *slog.Logger, flag string, value, file any) {
	log.Warn("a flag overrides the deployment's policy for this daemon only: its stores run another policy than the rest of their groups (their leaders report the difference); set it in the deployment file's policy section instead",
		"flag", "--"+flag, "value", fmt.Sprint(value), "deployment_file", fmt.Sprint(file))
}

// addSnapshotFlags declares the log-compaction flags shared by run and dev.
// storehost.Options.Validate checks them.
func addSnapshotFlags(fs *pflag.FlagSet, o *storehost.Options) {
	def := storegroup.DefaultConfig()
	fs.Uint64Var(&o.SnapshotThreshold, "snapshot-threshold", def.SnapshotThreshold, "take a raft snapshot and compact the log once this many entries were written since the last snapshot (at least 1). A snapshot is only a reference to the repository file, so it is cheap; lower values keep the raft log small, and make a member that falls further behind than --trailing-logs (or lost its disk) receive a copy of the repository instead of the log")
	fs.DurationVar(&o.SnapshotInterval, "snapshot-interval", def.SnapshotInterval, "how often raft checks --snapshot-threshold (each wait is drawn between this and twice this, so the stores of a group do not snapshot together; at least 5ms)")
	fs.StringVar(&o.LogStore, "log-store", storegroup.LogStoreWAL, "raft log store of new stores: wal (segment files under wal/) or boltdb (raft.db). A store that already has a log keeps the kind it has; to move it, move its data directory aside and start it: it rejoins its group empty and catches up")
	fs.Uint64Var(&o.TrailingLogs, "trailing-logs", def.TrailingLogs, "log entries kept after a snapshot, so a member only slightly behind (a short crash, pause or partition) catches up from the log; a member further behind is sent a full copy of the repository (0: keep none)")
}

// parseFlags parses a subcommand's flags. It returns -1 when the command
// should go on, else the exit code: 0 after --help, 2 after a flag error or
// a stray argument, which it reports with the --help hint (a subcommand
// takes no positional arguments).
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) int {
	cmd := "umstored " + fs.Name()
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(stderr, cmd, err)
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, cmd, fmt.Sprintf("unexpected argument %q (every option is a --flag)", fs.Arg(0)))
	}
	return -1
}
