package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"umstore/internal/cli"
	"umstore/receiver"
	"umstore/wire"
)

// options are umrcv's flags, bound into one struct by bindFlags.
type options struct {
	fs *pflag.FlagSet // the flags, to ask which were given

	deployment  string
	stores      *cli.StoreFlags
	source      string
	from        string
	to          uint64
	follow      bool
	group       int
	name        string
	consensus   string
	paced       bool
	asJSON      bool
	timeout     time.Duration
	logLevel    string
	logFormat   string
	showVersion bool
	security    *cli.SecurityFlags
}

// bindFlags defines umrcv's flags on a new flag set that reports to
// stderr.
func bindFlags(stderr io.Writer) *options {
	fs := pflag.NewFlagSet("umrcv", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{fs: fs}
	fs.StringVar(&o.deployment, "deployment", "", "deployment `FILE` (from umstored plan or umstored dev)")
	o.stores = cli.AddStoreFlags(fs)
	fs.StringVar(&o.source, "source", "", "source name (required)")
	fs.StringVar(&o.from, "from", "oldest", "where to start: a sequence number `SEQ`, oldest (the oldest any group retains) or newest (only new messages); with --name the default is after the last message NAME consumed (oldest for a new name)")
	fs.Uint64Var(&o.to, "to", 0, "last sequence number to read (default: the highest any group holds)")
	fs.BoolVar(&o.follow, "follow", false, "after reading, keep printing new messages until interrupted")
	fs.IntVar(&o.group, "group", 0, "read from this group only (1-based: the deployment's group index, or the position in the store list's GroupIDX order)")
	fs.StringVar(&o.name, "name", "", "a durable receiver: record what it printed in the stores under `NAME` and resume after it when started again")
	fs.StringVar(&o.consensus, "consensus", "majority", "with --name, where to resume when the stores recorded different positions: lowest, majority or highest (UM ume_consensus_sequence_number_behavior)")
	fs.BoolVar(&o.paced, "paced", false, "with --name, register as a receiver-paced persistence receiver: a paced source keeps its messages until this receiver printed them")
	fs.BoolVar(&o.asJSON, "json", false, `print {"seq":N,"payload":"<base64>"} per line`)
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up reading after this long (not with --follow)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	fs.BoolVar(&o.showVersion, "version", false, "print the version, the formats the binary reads and writes, and exit")
	o.security = cli.AddSecurityFlags(fs)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return o
}

// validate checks the flags against each other; its errors name the flag
// (bad usage: exit status 2).
func (o *options) validate() error {
	fs := o.fs
	switch {
	case o.source == "":
		return errors.New("--source is required")
	case wire.CheckSourceName(o.source) != nil:
		return fmt.Errorf("--source: %w", wire.CheckSourceName(o.source))
	case o.from != "oldest" && o.from != "newest" && (parseSeq(o.from) == 0):
		return fmt.Errorf("--from %q: want a sequence number (1 or more), oldest or newest", o.from)
	case parseSeq(o.from) > wire.MaxSeq:
		return fmt.Errorf("--from %s is above %d, the highest sequence number a source can have", o.from, uint64(wire.MaxSeq))
	case fs.Changed("to") && o.to > wire.MaxSeq:
		return fmt.Errorf("--to %d is above %d, the highest sequence number a source can have; omit --to to read up to the highest one held", o.to, uint64(wire.MaxSeq))
	case fs.Changed("to") && parseSeq(o.from) != 0 && o.to < parseSeq(o.from):
		return fmt.Errorf("--to %d is below --from %s", o.to, o.from)
	case o.follow && fs.Changed("to"):
		return errors.New("--follow reads without end; drop --to")
	case o.name != "" && wire.CheckSourceName(o.name) != nil:
		return fmt.Errorf("--name: %w", wire.CheckSourceName(o.name))
	case o.name == "" && (fs.Changed("consensus") || o.paced):
		return errors.New("--consensus and --paced are for a durable receiver: give it a --name")
	}
	return nil
}

// newReceiver makes the receiver the flags describe: its logger, its
// stores, their security. A durable umrcv acknowledges what reached
// stdout, not what reached its buffer: a crash must not lose a message it
// had acknowledged. Its errors are bad usage (exit status 2).
func (o *options) newReceiver(stderr io.Writer) (*receiver.Receiver, error) {
	cons, err := receiver.ParseConsensus(o.consensus)
	if err != nil {
		return nil, fmt.Errorf("--consensus: %w", err)
	}
	logger, err := cli.Logger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		return nil, err
	}
	list, d, err := cli.Stores(o.deployment, *o.stores)
	if err != nil {
		return nil, err
	}
	if list.RegIDs != nil {
		return nil, errors.New("the store list gives the stores RegIDs: umrcv reads without registering, so it has no RegID; give 0 (use --name to record consumption)")
	}
	if list.RegID != 0 {
		return nil, fmt.Errorf("the store list gives RegID %d: umrcv reads without registering, so it has no RegID; give 0 (use --name to record consumption)", list.RegID)
	}
	groups := list.Groups
	list.LogDomains(logger)
	tlsCfg, token, err := cli.ClientSecurity(d, *o.security)
	if err != nil {
		return nil, err
	}
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group, cfg.Logger, cfg.Name = o.source, groups, o.group, logger, o.name
	cfg.TLS, cfg.Token = tlsCfg, token
	cfg.ExplicitAck, cfg.Consensus, cfg.Paced = true, cons, o.paced
	return receiver.New(cfg)
}
