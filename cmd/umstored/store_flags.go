package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"umstore/dirlock"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/storehost"
)

// storeFlags are what the flags of run and dev set of the daemon's stores,
// bound in one place (bind): a flag that sets a key of the deployment's
// policy binds into policy, and the store settings that are no part of the
// policy (the receivers', --log-store) bind into store, the configuration
// every store of the daemon starts from. A flag's default is its field's
// value when it is bound: placement's default policy, storegroup's
// defaults.
type storeFlags struct {
	policy placement.Policy
	store  storegroup.Config
}

// defaultStoreFlags returns the flags' defaults.
func defaultStoreFlags() storeFlags {
	f := storeFlags{policy: placement.DefaultPolicy(), store: storegroup.DefaultConfig()}
	f.store.LogStore = storegroup.LogStoreWAL
	return f
}

// bind declares the flags on fs; with lock, run's --lock and
// --lock-keepalive too.
func (f *storeFlags) bind(fs *pflag.FlagSet, lock bool) {
	bindPolicyFlags(fs, &f.policy, lock)
	s := &f.store
	fs.DurationVar(&s.ReceiverActivityTimeout, "receiver-activity-timeout", s.ReceiverActivityTimeout, "expire a named receiver silent this long: its name may be taken over and it holds no paced source back; its position is kept (UM receiver-activity-timeout)")
	fs.DurationVar(&s.ReceiverStateLifetime, "receiver-state-lifetime", s.ReceiverStateLifetime, "forget a named receiver's position once it has been silent this long (UM receiver-state-lifetime; 0: keep it, unlike UM, whose 0 forgets it at the activity timeout)")
	fs.BoolVar(&s.AllowReceiverPacedPersistence, "allow-receiver-paced-persistence", s.AllowReceiverPacedPersistence, "let publishers ask for receiver-paced persistence: a paced source keeps its messages until its paced receivers consumed them, within the retention limits (UM repository-allow-receiver-paced-persistence)")
	fs.DurationVar(&s.RepositoryCommitInterval, "repository-commit-interval", s.RepositoryCommitInterval, "how long a store may keep applied publishes in one open repository transaction before it commits them (fewer repository fsyncs at a steady rate; acknowledgements never wait for it, readers past the committed messages do; 0: commit every batch; at most 1s)")
	fs.DurationVar(&s.FollowerCommitInterval, "follower-commit-interval", s.FollowerCommitInterval, "--repository-commit-interval for a store while it does not lead its group: nobody reads a follower's repository as it goes, and it commits everything before it leads (longer: fewer fsyncs beside the leaders' log writes; the cost is a longer replay after a crash; 0: commit every batch; at most 1s)")
	l := &s.ClientLimits
	fs.IntVar(&l.MaxSourcesPerConn, "max-sources-per-conn", l.MaxSourcesPerConn, "sources one client connection may hold registered; one more is refused with an Error naming this limit (a source registered again on the same connection counts once; a publisher's goodbye or closing the connection frees its place)")
	fs.IntVar(&l.MaxSources, "max-sources", l.MaxSources, "source registrations all client connections of one store may hold together (one per connection and source, freed by the publisher's goodbye or when its connection closes); --max-sources-per-conn is never more than this")
	fs.IntVar(&l.MaxReceiversPerConn, "max-receivers-per-conn", l.MaxReceiversPerConn, "receiver names one client connection may register, and subscriptions it may run at once (each); one more is refused with an Error naming this limit")
	fs.IntVar(&l.MaxSessions, "max-sessions", l.MaxSessions, "sources the leader may hold for publisher sessions, counting those whose connections closed without a goodbye until the source-activity-timeout expires them; one more source is refused with an Error naming this limit")
	fs.IntVar(&l.MaxReceivers, "max-receivers", l.MaxReceivers, "receiver names all client connections of one store may hold registered together (one per connection and name, freed by the receiver's goodbye or when its connection closes); --max-receivers-per-conn is never more than this")
	fs.StringVar(&s.LogStore, "log-store", s.LogStore, "raft log store of new stores: wal (segment files under wal/) or boltdb (raft.db). A store that already has a log keeps the kind it has; to move it, move its data directory aside and start it: it rejoins its group empty and catches up")
}

// bindPolicyFlags declares the flags that set a key of the policy p, each
// with p's value as its default.
func bindPolicyFlags(fs *pflag.FlagSet, p *placement.Policy, lock bool) {
	fs.Uint64Var(&p.Retention.MaxBytes, "retention-max-bytes", p.Retention.MaxBytes, "per source: keep at most this many payload bytes, oldest released first (UM repository-disk-file-size-limit; 0: no limit)")
	fs.Uint64Var(&p.Retention.MaxMessages, "retention-max-messages", p.Retention.MaxMessages, "per source: keep at most this many messages (0: no limit)")
	fs.DurationVar(duration(&p.Retention.MaxAge), "retention-max-age", time.Duration(p.Retention.MaxAge), "per source: release messages older than this (0: no limit)")
	fs.IntVar(&p.RepairRate, "repair-rate", p.RepairRate, "intergroup repair copies at most this many payload bytes per second, so live publishing keeps priority")
	fs.DurationVar(duration(&p.SourceActivityTimeout), "source-activity-timeout", time.Duration(p.SourceActivityTimeout), "free a source for a new publisher after its publisher has been silent this long (UM source-activity-timeout)")
	fs.Uint64Var(&p.Snapshot.Threshold, "snapshot-threshold", p.Snapshot.Threshold, "take a raft snapshot and compact the log once this many entries were written since the last snapshot (at least 1). A snapshot is only a reference to the repository file, so it is cheap; lower values keep the raft log small, and make a member that falls further behind than --trailing-logs (or lost its disk) receive a copy of the repository instead of the log")
	fs.DurationVar(duration(&p.Snapshot.Interval), "snapshot-interval", time.Duration(p.Snapshot.Interval), "how often raft checks --snapshot-threshold (each wait is drawn between this and twice this, so the stores of a group do not snapshot together; at least 5ms)")
	fs.Uint64Var(&p.Snapshot.TrailingLogs, "trailing-logs", p.Snapshot.TrailingLogs, "log entries kept after a snapshot, so a member only slightly behind (a short crash, pause or partition) catches up from the log; a member further behind is sent a full copy of the repository (0: keep none)")
	if lock {
		fs.StringVar(&p.Lock.Mode, "lock", p.Lock.Mode, "how a store locks its data directory: flock, or lease for shared storage where flock cannot be trusted (overrides the policy's lock.mode)")
		fs.DurationVar(duration(&p.Lock.KeepAlive), "lock-keepalive", time.Duration(p.Lock.KeepAlive), "with --lock lease: how often the holder renews its lease (the lease lasts 3 times this; a standby checks every 2 times this; overrides the policy's lock.keepalive)")
	}
}

// duration lets a flag set a policy's duration.
func duration(d *placement.Duration) *time.Duration { return (*time.Duration)(d) }

// Validate refuses values the stores would reject, before any starts; its
// errors name the flag. A policy flag set to a value that holds no setting
// (--source-activity-timeout 0, --repair-rate 0) stands for the default,
// as the same key in the deployment file does
// ([placement.Policy.WithDefaults]).
func (f *storeFlags) Validate() error {
	p, s := f.policy, f.store
	if err := storegroup.CheckLogStore(s.LogStore); err != nil {
		return err
	}
	if err := storegroup.CheckSnapshotSettings(p.Snapshot.Threshold, time.Duration(p.Snapshot.Interval)); err != nil {
		return err
	}
	if _, err := dirlock.ParseMode(p.Lock.Mode); err != nil {
		return fmt.Errorf("--lock: %w", err)
	}
	if p.Retention.MaxAge < 0 {
		return fmt.Errorf("--retention-max-age %v: must not be negative (0: no age limit)", p.Retention.MaxAge)
	}
	if s.ReceiverActivityTimeout <= 0 {
		return fmt.Errorf("--receiver-activity-timeout %v: must be positive (%v by default)", s.ReceiverActivityTimeout, storegroup.DefaultConfig().ReceiverActivityTimeout)
	}
	if s.RepositoryCommitInterval < 0 || s.RepositoryCommitInterval > time.Second {
		return fmt.Errorf("--repository-commit-interval %v: must be 0..1s (0 commits every batch; %v by default)", s.RepositoryCommitInterval, storegroup.DefaultConfig().RepositoryCommitInterval)
	}
	if s.FollowerCommitInterval < 0 || s.FollowerCommitInterval > time.Second {
		return fmt.Errorf("--follower-commit-interval %v: must be 0..1s (0 commits every batch; %v by default)", s.FollowerCommitInterval, storegroup.DefaultConfig().FollowerCommitInterval)
	}
	if s.ReceiverStateLifetime < 0 {
		return fmt.Errorf("--receiver-state-lifetime %v: must not be negative (0 keeps a receiver's position)", s.ReceiverStateLifetime)
	}
	for _, l := range []struct {
		flag string
		n    int
	}{
		{"max-sources-per-conn", s.ClientLimits.MaxSourcesPerConn},
		{"max-sources", s.ClientLimits.MaxSources},
		{"max-receivers-per-conn", s.ClientLimits.MaxReceiversPerConn},
		{"max-receivers", s.ClientLimits.MaxReceivers},
		{"max-sessions", s.ClientLimits.MaxSessions},
	} {
		if l.n < 0 {
			return fmt.Errorf("--%s %d: must not be negative (0 takes the default)", l.flag, l.n)
		}
	}
	return nil
}

// config returns the configuration every store of the daemon starts from
// when it runs the policy p: the flags' store settings with p over them
// (storehost.ApplyPolicy).
func (f *storeFlags) config(p placement.Policy) storegroup.Config {
	cfg := f.store
	storehost.ApplyPolicy(&cfg, p)
	return cfg
}

// overPolicy returns the deployment file's policy with the value of every
// policy flag given on the command line over it, warning about each: the
// daemon's stores then run another policy than the rest of their groups.
// A key no flag was given for keeps the file's value, whatever the flag's
// default.
func overPolicy(fs *pflag.FlagSet, file placement.Policy, log *slog.Logger) (placement.Policy, error) {
	p := file
	over := pflag.NewFlagSet("policy", pflag.ContinueOnError)
	bindPolicyFlags(over, &p, true)
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		o := over.Lookup(f.Name)
		if o == nil {
			return // no key of the policy
		}
		fileValue := o.Value.String()
		if err := o.Value.Set(f.Value.String()); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
			return
		}
		warnOverride(log, f.Name, f.Value.String(), fileValue)
	})
	return p, errors.Join(errs...)
}

// warnOverride warns that a flag overrides the deployment's policy.
func warnOverride(log *slog.Logger, flag, value, file string) {
	log.Warn("a flag overrides the deployment's policy for this daemon only: its stores run another policy than the rest of their groups (their leaders report the difference); set it in the deployment file's policy section instead",
		"flag", "--"+flag, "value", value, "deployment_file", file)
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
