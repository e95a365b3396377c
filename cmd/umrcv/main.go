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

	"umstore/internal/cli"
	"umstore/internal/formats"
	"umstore/internal/version"
	"umstore/receiver"
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

Retention releases a source's oldest messages on purpose: without --from
(or with --from oldest) umrcv starts at the oldest message any group
retains and skips what retention releases while it reads. A range asked
for with --from SEQ that retention released is named on stderr as
released, with its own exit status, 3.

Exit status: 0 if every message in the range was read (released messages
outside an explicit --from range are not asked for); 1 if some range is
held by no reachable group and was not released by retention (the ranges
are named on stderr), the source is unknown to every reachable group (a
typo: the sources they hold are named), or the stores could not be
reached; 2 for bad usage; 3 if everything else was read but part of the
range asked for (--from SEQ) was released by retention (named on stderr).
With --group N, a group electing a leader is waited for, within --timeout.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is umrcv with args, writing to stdout and stderr; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o := bindFlags(stderr)
	fs := o.fs
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(stderr, "umrcv", err)
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, "umrcv", fmt.Sprintf("unexpected argument %q (every option is a --flag)", fs.Arg(0)))
	}
	if o.showVersion {
		fmt.Fprintln(stdout, "umrcv", version.String())
		fmt.Fprint(stdout, formats.String())
		return 0
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	r, err := o.newReceiver(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := newSink(stdout, r, o.name != "", o.asJSON)
	// The last acknowledgement goes out after the output is flushed, before
	// the receiver records its position and says goodbye.
	defer func() { out.flush(); r.Close() }()
	if o.follow {
		return followSource(ctx, o, r, out, stderr)
	}
	return readSource(ctx, o, r, out, stderr)
}

// start is where reading starts: after what a durable name consumed
// (unless --from says otherwise), else --from. retained says the read
// asked for what is retained (--from oldest, or a new durable name), so
// what retention releases meanwhile is skipped, not reported.
func (o *options) start(ctx context.Context, r *receiver.Receiver) (from uint64, retained bool, err error) {
	if o.name != "" && !o.fs.Changed("from") {
		return resumeSeq(ctx, r, o.follow, o.timeout)
	}
	from, err = startSeq(ctx, r, o.from)
	return from, o.from == "oldest", err
}

// followSource is umrcv --follow: it prints from the start on, without
// end, until interrupted (exit status 0) or the receiver fails (1).
func followSource(ctx context.Context, o *options, r *receiver.Receiver, out *sink, stderr io.Writer) int {
	if known, err := r.Known(ctx); err == nil && !known {
		fmt.Fprintf(stderr, "umrcv: source %q is not known to the stores yet; waiting for a publisher to register it\n", cli.Printable(o.source))
	}
	from, _, err := o.start(ctx, r)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	err = r.Follow(ctx, from, out.printFlushed, func(rg receiver.Range) {
		if rg.To <= r.Released() {
			fmt.Fprintf(stderr, "umrcv: messages %s were released by retention; skipped\n", rg)
			return
		}
		fmt.Fprintf(stderr, "umrcv: unrecoverable loss: messages %s are held by no reachable group; skipped\n", rg)
	})
	if ctx.Err() != nil {
		return 0
	}
	fmt.Fprintln(stderr, "umrcv:", err)
	return 1
}

// readSource prints the range from the start to --to (default: the
// highest sequence number any group holds), within --timeout. It returns
// the exit status: 1 when the source is unknown, the stores cannot be
// reached, or part of the range is held by no reachable group.
func readSource(ctx context.Context, o *options, r *receiver.Receiver, out *sink, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if code := checkKnown(ctx, r, o.source, stderr); code != 0 {
		return code
	}
	from, retained, err := o.start(ctx, r)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	last := o.to
	if !o.fs.Changed("to") {
		last, err = r.High(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "umrcv:", err)
			return 1
		}
		if last < from {
			return 0 // nothing held yet, or nothing new for this name
		}
	}
	if retained {
		from = receiver.Oldest // where retention now starts; what it releases meanwhile is skipped
	}
	err = r.Read(ctx, from, last, out.print)
	var missing *receiver.MissingError
	var released *receiver.ReleasedError
	switch {
	case errors.As(err, &missing):
		out.flush()
		fmt.Fprintf(stderr, "umrcv: %v\n", err)
		return 1
	case errors.As(err, &released):
		out.flush()
		fmt.Fprintf(stderr, "umrcv: %v\n", err)
		return exitReleased
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
func resumeSeq(ctx context.Context, r *receiver.Receiver, follow bool, timeout time.Duration) (from uint64, retained bool, err error) {
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	reg, err := r.Register(ctx)
	if err != nil {
		return 0, false, err
	}
	if reg.Resume > 0 {
		return reg.Resume, false, nil
	}
	from, err = startSeq(ctx, r, "oldest")
	return from, true, err
}

// exitReleased is umrcv's exit status when part of the range asked for
// was released by retention and everything else was read.
const exitReleased = 3

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
