// Command umrcv reads a source's messages back from umstore through the
// receiver SDK, in sequence order, from whichever group holds each one.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
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

const usage = `Usage: umrcv (--deployment FILE | --store IP:port[:RegID[:GroupIDX]]...) --source NAME [flags]

Prints the messages of source NAME in sequence order, one per line, reading
each from whichever store group holds it (--group N: from that group only,
to check what one group holds). Without --to it reads up to the highest
sequence number any group holds; with --follow it then keeps printing new
messages until interrupted.

Lines are "SEQ PAYLOAD" (a payload that is not printable UTF-8 is shown as
"base64:..."); with --json each line is {"seq":N,"payload":"<base64>"}.

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
	stores := fs.StringArray("store", nil, "a store as UM's ume_store, `IP:port[:RegID[:GroupIDX]]` (repeat; instead of --deployment)")
	source := fs.String("source", "", "source name (required)")
	fromFlag := fs.String("from", "oldest", "where to start: a sequence number `SEQ`, oldest (the oldest any group retains) or newest (only new messages)")
	to := fs.Uint64("to", 0, "last sequence number to read (default: the highest any group holds)")
	follow := fs.Bool("follow", false, "after reading, keep printing new messages until interrupted")
	group := fs.Int("group", 0, "read from this group only (1-based)")
	name := fs.String("name", "", "with --follow, record this receiver's consumption in the stores under `NAME`")
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
	}
	log, err := cli.Logger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	groups, d, err := cli.StoreGroups(*deployment, *stores)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	tlsCfg, token, err := cli.ClientSecurity(d, *secFlags)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group, cfg.Logger, cfg.Name = *source, groups, *group, log, *name
	cfg.TLS, cfg.Token = tlsCfg, token
	r, err := receiver.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "umrcv:", err)
		return 2
	}
	defer r.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	print := func(m receiver.Message) error {
		if *asJSON {
			b, _ := json.Marshal(struct {
				Seq     uint64 `json:"seq"`
				Payload []byte `json:"payload"`
			}{m.Seq, m.Payload})
			out.Write(b)
			return out.WriteByte('\n')
		}
		fmt.Fprintf(out, "%d %s\n", m.Seq, showPayload(m.Payload))
		return nil
	}

	if *follow {
		if known, err := r.Known(ctx); err == nil && !known {
			fmt.Fprintf(stderr, "umrcv: source %q is not known to the stores yet; waiting for a publisher to register it\n", cli.Printable(*source))
		}
		from, err := startSeq(ctx, r, *fromFlag)
		if err != nil {
			fmt.Fprintln(stderr, "umrcv:", err)
			return 1
		}
		flushing := func(m receiver.Message) error {
			err := print(m)
			if err == nil {
				err = out.Flush()
			}
			return err
		}
		err = r.Follow(ctx, from, flushing, func(rg receiver.Range) {
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
	from, err := startSeq(ctx, r, *fromFlag)
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
			return 0 // nothing held yet
		}
	}
	err = r.Read(ctx, from, last, print)
	var missing *receiver.MissingError
	switch {
	case errors.As(err, &missing):
		out.Flush()
		fmt.Fprintf(stderr, "umrcv: %v\n", err)
		return 1
	case err != nil:
		out.Flush()
		fmt.Fprintln(stderr, "umrcv:", err)
		return 1
	}
	return 0
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
