// Command umrcv reads a source's messages back from umstore through the
// receiver SDK, in sequence order, from whichever group holds each one.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"umstore/internal/cli"
	"umstore/internal/version"
	"umstore/receiver"
	"umstore/wire"
)

const usage = `Usage: umrcv (--deployment FILE [--store-name NAME...] | --store IP:port[:RegID[:GroupIDX]]...) --source NAME [flags]

Prints the messages of source NAME in sequence order, one per line, reading
each from whichever store group holds it (--group N: from that group only,
to check what one group holds). Without --to it reads up to the highest
sequence number any group holds; with --follow it then keeps printing new
messages until interrupted.

Stores may be given as a UM store list (--store, or --store-name with a
deployment; stores with the same GroupIDX form a group; --store-group
checks the list). umrcv reads without registering, so RegIDs must be 0.

Lines are "SEQ PAYLOAD" (a payload that is not printable UTF-8 is shown as
"base64:..."); with --json each line is {"seq":N,"payload":"<base64>"}.

With --name it is a durable receiver: the stores record, under NAME, the
last message it printed (acknowledged once written to stdout, in batches at
most every 100ms), and started again under the same NAME it resumes after
it, with or without --follow. After a crash it prints again at most what it
printed in its last 100ms or so before the crash (at-least-once), never
less. One live receiver per name: a second is refused until the first
closes, or is silent for the stores' receiver-activity-timeout (30s), which
a receiver restarted after kill -9 waits out.

Exit status: 0 if every message in the range was read; 1 if some range is
held by no reachable group (the ranges are named on stderr), the source is
unknown to every reachable group (a typo: the sources they hold are named),
or the stores could not be reached; 2 for bad usage. With --group N, a group
electing a leader is waited for, within --timeout.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("umrcv", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` (from umstored plan or umstored dev)")
	stores := cli.AddStoreFlags(fs)
	source := fs.String("source", "", "source name (required)")
	fromFlag := fs.String("from", "oldest", "where to start: a sequence number `SEQ`, oldest (the oldest any group retains) or newest (only new messages); with --name the default is after the last message NAME consumed (oldest for a new name)")
	to := fs.Uint64("to", 0, "last sequence number to read (default: the highest any group holds)")
	follow := fs.Bool("follow", false, "after reading, keep printing new messages until interrupted")
	group := fs.Int("group", 0, "read from this group only (1-based: the deployment's group index, or the position in the store list's GroupIDX order)")
	name := fs.String("name", "", "a durable receiver: record what it printed in the stores under `NAME` and resume after it when started again")
	consensus := fs.String("consensus", "majority", "with --name, where to resume when the stores recorded different positions: lowest, majority or highest (UM ume_consensus_sequence_number_behavior)")
	paced := fs.Bool("paced", false, "with --name, register as a receiver-paced persistence receiver: a paced source keeps its messages until this receiver printed them")
	asJSON := fs.Bool("json", false, `print {"seq":N,"payload":"<base64>"} per line`)
	timeout := fs.Duration("timeout", 60*time.Second, "give up reading after this long (not with --follow)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	secFlags := cli.AddSecurityFlags(fs)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(stderr, "umrcv", err)
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, "umrcv", fmt.Sprintf("unexpected argument %q (every option is a --flag)", fs.Arg(0)))
	}
	if *showVersion {
		fmt.Fprintln(stdout, "umrcv", version.String())
		return 0
	}
	switch {
	case *source == "":
		fmt.Fprintln(stderr, "umrcv: --source is required")
		return 2
	case wire.CheckSourceName(*source) != nil:
		fmt.Fprintln(stderr, "umrcv: --source:", wire.CheckSourceName(*source))
		return 2
	case *fromFlag != "oldest" && *fromFlag != "newest" && (parseSeq(*fromFlag) == 0):
		fmt.Fprintf(stderr, "umrcv: --from %q: want a sequence number (1 or more), oldest or newest\n", *fromFlag)
		return 2
	case parseSeq(*fromFlag) > wire.MaxSeq:
		fmt.Fprintf(stderr, "umrcv: --from %s is above %d, the highest sequence number a source can have\n", *fromFlag, uint64(wire.MaxSeq))
		return 2
	case fs.Changed("to") && *to > wire.MaxSeq:
		fmt.Fprintf(stderr, "umrcv: --to %d is above %d, the highest sequence number a source can have; omit --to to read up to the highest one held\n", *to, uint64(wire.MaxSeq))
		return 2
	case fs.Changed("to") && parseSeq(*fromFlag) != 0 && *to < parseSeq(*fromFlag):
		fmt.Fprintf(stderr, "umrcv: --to %d is below --from %s\n", *to, *fromFlag)
		return 2
	case *follow && fs.Changed("to"):
		fmt.Fprintln(stderr, "umrcv: --follow reads without end; drop --to")
		return 2
	case *name != "" && wire.CheckSourceName(*name) != nil:
		fmt.Fprintln(stderr, "umrcv: --name:", wire.CheckSourceName(*name))
		return 2
	case *name == "" && (fs.Changed("consensus") || *paced):
		fmt.Fprintln(stderr, "umrcv: --consensus and --paced are for a durable receiver: give it a --name")
		return 2
	}
	cons, err := receiver.ParseConsensus(*consensus)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv: --consensus:", err)
		return 2
	}
	logger, err := cli.Logger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	list, d, err := cli.Stores(*deployment, *stores)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	if list.RegID != 0 {
		fmt.Fprintf(stderr, "umrcv: the store list gives RegID %d: umrcv reads without registering, so it has no RegID; give 0 (use --name to record consumption)\n", list.RegID)
		return 2
	}
	groups := list.Groups
	tlsCfg, token, err := cli.ClientSecurity(d, *secFlags)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group, cfg.Logger, cfg.Name = *source, groups, *group, logger, *name
	cfg.TLS, cfg.Token = tlsCfg, token
	// A durable umrcv acknowledges what reached stdout, not what reached
	// its buffer: a crash must not lose a message it had acknowledged.
	cfg.ExplicitAck, cfg.Consensus, cfg.Paced = true, cons, *paced
	r, err := receiver.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := newSink(stdout, r, *name != "", *asJSON)
	// The last acknowledgement goes out after the output is flushed, before
	// the receiver records its position and says goodbye.
	defer func() { out.flush(); r.Close() }()

	// Where reading starts: after what a durable name consumed (unless
	// --from says otherwise), else --from.
	start := func(ctx context.Context) (uint64, error) {
		if *name != "" && !fs.Changed("from") {
			return resumeSeq(ctx, r, *follow, *timeout)
		}
		return startSeq(ctx, r, *fromFlag)
	}
	if *follow {
		if known, err := r.Known(ctx); err == nil && !known {
			fmt.Fprintf(stderr, "umrcv: source %q is not known to the stores yet; waiting for a publisher to register it\n", cli.Printable(*source))
		}
		from, err := start(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "umrcv:", err)
			return 1
		}
		err = r.Follow(ctx, from, out.printFlushed, func(rg receiver.Range) {
			fmt.Fprintf(stderr, "umrcv: unrecoverable loss: messages %s are held by no reachable group; skipped\n", rg)
		})
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if code := checkKnown(ctx, r, *source, stderr); code != 0 {
		return code
	}
	from, err := start(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	last := *to
	if !fs.Changed("to") {
		last, err = r.High(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "umrcv:", err)
			return 1
		}
		if last < from {
			return 0 // nothing held yet, or nothing new for this name
		}
	}
	err = r.Read(ctx, from, last, out.print)
	var missing *receiver.MissingError
	switch {
	case errors.As(err, &missing):
		out.flush()
		fmt.Fprintf(stderr, "umrcv: %v\n", err)
		return 1
	case err != nil:
		out.flush()
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	return 0
}

// resumeSeq registers a durable receiver and returns where it resumes:
// after the last message its name consumed, or, for a new name, at the
// oldest message retained. Without --follow the wait for its registration
// (a name still held by a receiver that was killed) is bounded by
// --timeout.
func resumeSeq(ctx context.Context, r *receiver.Receiver, follow bool, timeout time.Duration) (uint64, error) {
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	reg, err := r.Register(ctx)
	if err != nil {
		return 0, err
	}
	if reg.Resume > 0 {
		return reg.Resume, nil
	}
	return startSeq(ctx, r, "oldest")
}

func parseSeq(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// checkKnown says, and returns exit code 1, when no reachable group knows
// the source (a typo, say): reading it would print nothing and look like
// success. It names the sources the stores hold.
func checkKnown(ctx context.Context, r *receiver.Receiver, source string, stderr io.Writer) int {
	known, err := r.Known(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	if known {
		return 0
	}
	msg := fmt.Sprintf("umrcv: source %q is unknown: no reachable store group has ever held it", cli.Printable(source))
	if names, err := r.SourceNames(ctx); err == nil {
		if len(names) == 0 {
			msg += " (they hold no source yet)"
		} else {
			for i, n := range names {
				names[i] = cli.Printable(n)
			}
			msg += "; they hold: " + strings.Join(names, ", ")
		}
	}
	fmt.Fprintln(stderr, msg)
	return 1
}

// startSeq turns --from into a sequence number.
func startSeq(ctx context.Context, r *receiver.Receiver, from string) (uint64, error) {
	switch from {
	case "oldest":
		low, err := r.Oldest(ctx)
		if err != nil {
			return 0, err
		}
		return max(low, 1), nil
	case "newest":
		high, err := r.High(ctx)
		return high + 1, err
	}
	return parseSeq(from), nil
}

// showPayload prints printable text as is and anything else as base64, so
// that a payload can neither break the one-message-per-line format nor
// send a terminal control sequences: C0 and C1 controls (ESC, the 8-bit
// CSI U+009B), DEL, and format characters such as bidirectional overrides
// all make a payload "not printable". Tabs are kept.
func showPayload(p []byte) string {
	if utf8.Valid(p) {
		printable := true
		for _, c := range string(p) {
			if c != '\t' && !unicode.IsPrint(c) && !unicode.Is(unicode.Zs, c) {
				printable = false
				break
			}
		}
		if printable {
			return string(p)
		}
	}
	return "base64:" + base64.StdEncoding.EncodeToString(p)
}
