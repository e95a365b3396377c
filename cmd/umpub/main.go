// Command umpub publishes messages to umstore through the publisher SDK:
// generated messages (--count, --size, --rate) or lines from standard input
// (--stdin). It reports how many became stable and how fast, and exits
// non-zero unless every message sent became stable within --timeout.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"umstore/internal/cli"
	"umstore/internal/version"
	"umstore/publisher"
	"umstore/quorum"
	"umstore/wire"
)

const usage = `Usage: umpub (--deployment FILE [--store-name NAME...] | --store IP:port[:RegID[:GroupIDX]]...) --source NAME [flags]

Publishes messages on source NAME to every store group and waits until each
is stable (by default: committed by any one group). Without --stdin it sends
--count generated messages of --size bytes, flat out or at --rate per second;
with --stdin it sends each line of standard input as one message.

Stores may be given as a UM store list: --store (ume_store) or, with a
deployment, --store-name (ume_store_name); stores with the same GroupIDX
form a group, --store-group (ume_store_group) checks the list, and a RegID
other than 0 (or --session-id, ume_session_id) makes a restarted umpub the
same registration, taking its source back at once.

The summary reports messages sent and stable, the sequence numbers used,
throughput and publish-to-stable latency; with --json it is one JSON object
on the last line. Exit status: 0 if every message sent became stable within
--timeout, 1 if not, 2 for bad usage.

Flags:
`

type options struct {
	deployment, source, intergroup, logLevel string
	intragroup, flightBehavior, sessionID    string
	stateFile                                string
	paced                                    string
	tls                                      *tls.Config
	token                                    string
	logFormat                                string
	stores                                   *cli.StoreFlags
	count, size, flight, sources             int
	flightBytes                              int64
	rate                                     float64
	stdin, json                              bool
	payload                                  string
	timeout, lifetime                        time.Duration

	// Worked out from the flags by run.
	intra    quorum.Intragroup
	behavior publisher.FlightBehavior
	regID    uint32
	session  uint64
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	fs := pflag.NewFlagSet("umpub", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.deployment, "deployment", "", "deployment `FILE` (from umstored plan or umstored dev)")
	o.stores = cli.AddStoreFlags(fs)
	fs.StringVar(&o.source, "source", "", "source name (required)")
	fs.IntVar(&o.count, "count", 1, "messages to generate (ignored with --stdin); per source with --sources")
	fs.IntVar(&o.sources, "sources", 1, "publish on this many sources at once, NAME-1 .. NAME-K, each with its own publisher (bench mode; not with --stdin)")
	fs.IntVar(&o.size, "size", 64, "bytes per generated message")
	fs.StringVar(&o.payload, "payload", "text", "what generated messages hold after their \"SOURCE #SEQ \" head: text (dots, which compress) or random (random bytes, which do not: for benchmarks)")
	fs.Float64Var(&o.rate, "rate", 0, "messages per second (0: as fast as stability allows)")
	fs.BoolVar(&o.stdin, "stdin", false, "publish each line of standard input as one message")
	fs.StringVar(&o.intergroup, "intergroup", "", "intergroup stability: any, majority, all-active or all, or UM's any-group, all-groups (default: the deployment's, else any)")
	fs.StringVar(&o.intragroup, "intragroup", "", "intragroup stability: quorum (a majority of a group's stores hold a message: its raft commit), all-active (every running store) or all (every store; a group with one down confirms nothing), or UM's all-stores (UM ume_retention_intragroup_stability_behavior; default: the deployment's, which is also the least the stores apply)")
	fs.IntVar(&o.flight, "flight-size", 1000, "unstable messages allowed in flight (UM ume_flight_size)")
	fs.Int64Var(&o.flightBytes, "flight-size-bytes", 0, "payload bytes allowed in flight, 0 for no limit (UM ume_flight_size_bytes)")
	fs.StringVar(&o.flightBehavior, "flight-size-behavior", "block", "when the flight is full: block, or notify: send on, and log over/under (at --log-level info) (UM ume_flight_size_behavior)")
	fs.DurationVar(&o.lifetime, "stability-lifetime", 20*time.Minute, "log a warning for messages still unstable after this long, 0 for never (UM ume_message_stability_lifetime)")
	fs.StringVar(&o.sessionID, "session-id", "", "register as UM session `ID` (ume_session_id: decimal, 0x hex or 0 octal; at most 0xFFFFFFFFFFFFFFFE), so a restarted umpub is the same registration")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up if not every message is stable by then (covers registration and sending)")
	fs.StringVar(&o.stateFile, "state-file", "", "keep the last stable sequence number, a bound on what was sent and the groups' identities in `FILE`, so a restart resumes past them even if the groups holding them are unreachable")
	fs.StringVar(&o.paced, "receiver-paced", "", "ask for receiver-paced persistence (UM ume_receiver_paced_persistence): blocking (held back at the retention limit until paced receivers consume) or non-blocking (the oldest released at the limit); the stores must run with --allow-receiver-paced-persistence")
	fs.BoolVar(&o.json, "json", false, "print the summary as one JSON object")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	secFlags := cli.AddSecurityFlags(fs)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(stderr, "umpub", err)
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, "umpub", fmt.Sprintf("unexpected argument %q (every option is a --flag)", fs.Arg(0)))
	}
	if *showVersion {
		fmt.Fprintln(stdout, "umpub", version.String())
		return 0
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	log, err := cli.Logger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	list, d, err := cli.Stores(o.deployment, *o.stores)
	if err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	groups := list.Groups
	o.regID = list.RegID
	if o.regID != 0 && o.session != 0 {
		fmt.Fprintln(stderr, "umpub: give a RegID in the store list or --session-id, not both (each names the registration)")
		return 2
	}
	tlsCfg, token, err := cli.ClientSecurity(d, *secFlags)
	if err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	o.tls, o.token = tlsCfg, token
	behaviour := quorum.Any
	if o.intergroup == "" && d != nil {
		o.intergroup = d.Stability.Intergroup
	}
	if o.intergroup != "" {
		if behaviour, err = quorum.ParseBehavior(o.intergroup); err != nil {
			fmt.Fprintln(stderr, "umpub: --intergroup:", err)
			return 2
		}
	}
	if o.intragroup != "" {
		if o.intra, err = quorum.ParseIntragroupBehavior(o.intragroup); err != nil {
			fmt.Fprintln(stderr, "umpub: --intragroup:", err)
			return 2
		}
		// The stores apply the stricter of the deployment's and the
		// source's: asking for a weaker one would not get it.
		if d != nil {
			floor, _ := quorum.ParseIntragroupBehavior(d.Stability.WithDefaults().Intragroup)
			if o.intra < floor {
				fmt.Fprintf(stderr, "umpub: --intragroup %s: the deployment's stores apply at least intragroup %q (stability.intragroup in %s); ask for it or a stricter one\n", o.intragroup, floor, o.deployment)
				return 2
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	names := []string{o.source}
	if o.sources > 1 {
		names = names[:0]
		for i := 1; i <= o.sources; i++ {
			names = append(names, fmt.Sprintf("%s-%d", o.source, i))
		}
	}
	runs := make([]*sourceRun, len(names))
	for i, name := range names {
		runs[i] = &sourceRun{source: name, rec: newRecorder()}
	}
	perSource := o
	perSource.rate = o.rate / float64(len(names))
	progress := startProgress(stderr, o, runs)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.publish(ctx, perSource, groups, behaviour, log, stdin)
		}()
	}
	wg.Wait()
	progress.stop()
	sum, sendErr, flushErr := mergeRuns(o.source, runs)
	sum.Intragroup = runs[0].intragroup
	printSummary(stdout, sum, o.json)
	switch {
	case sendErr != nil && sum.Sent == 0 && sum.Stable == 0 && errors.Is(sendErr, publisher.ErrRegistration):
		fmt.Fprintln(stderr, "umpub:", sendErr)
		return 1
	case sendErr != nil:
		fmt.Fprintln(stderr, "umpub: sending stopped:", sendErr)
		return 1
	case flushErr != nil:
		fmt.Fprintf(stderr, "umpub: %d of %d messages stable when waiting ended: %v\n", sum.Stable, sum.Sent, flushErr)
		return 1
	}
	return 0
}

func (o *options) check() error {
	switch {
	case o.payload != "text" && o.payload != "random":
		return fmt.Errorf("--payload %q: want text or random", o.payload)
	case o.source == "":
		return errors.New("--source is required")
	case wire.CheckSourceName(o.source) != nil:
		return fmt.Errorf("--source: %w", wire.CheckSourceName(o.source))
	case !o.stdin && o.count < 1:
		return fmt.Errorf("--count must be at least 1, got %d", o.count)
	case o.size < 0 || o.size > 8<<20:
		return fmt.Errorf("--size must be 0..%d bytes, got %d", 8<<20, o.size)
	case o.rate < 0:
		return fmt.Errorf("--rate must not be negative, got %v", o.rate)
	case o.paced != "" && o.paced != string(publisher.PacingBlocking) && o.paced != string(publisher.PacingNonBlocking):
		return fmt.Errorf("--receiver-paced %q: want blocking or non-blocking", o.paced)
	case o.flight < 1:
		return fmt.Errorf("--flight-size must be at least 1, got %d", o.flight)
	case o.flightBytes < 0:
		return fmt.Errorf("--flight-size-bytes must not be negative (0: no limit), got %d", o.flightBytes)
	case o.lifetime < 0:
		return fmt.Errorf("--stability-lifetime must not be negative (0: never), got %v", o.lifetime)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	case o.sources < 1 || o.sources > 1000:
		return fmt.Errorf("--sources must be 1..1000, got %d", o.sources)
	case o.sources > 1 && o.stdin:
		return errors.New("--sources and --stdin do not go together: standard input is one stream")
	}
	switch o.flightBehavior {
	case "block":
		o.behavior = publisher.FlightBlock
	case "notify":
		o.behavior = publisher.FlightNotify
	default:
		return fmt.Errorf("--flight-size-behavior %q: want block or notify", o.flightBehavior)
	}
	if o.sessionID != "" {
		id, err := strconv.ParseUint(o.sessionID, 0, 64)
		if err != nil || id > publisher.MaxSessionID {
			return fmt.Errorf("--session-id %q: want a number 0..0xFFFFFFFFFFFFFFFE (decimal, 0x hex or 0 octal; 0: none)", o.sessionID)
		}
		o.session = id
	}
	return nil
}

// send publishes the generated messages or standard input's lines.
func send(ctx context.Context, p *publisher.Publisher, o options, stdin io.Reader, rec *recorder) error {
	var interval time.Duration
	if o.rate > 0 {
		interval = time.Duration(float64(time.Second) / o.rate)
	}
	start := time.Now()
	rec.pace(start, interval)
	pace := func(i int) error {
		if interval == 0 {
			return nil
		}
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		return nil
	}
	if o.stdin {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for i := 0; sc.Scan(); i++ {
			if err := pace(i); err != nil {
				return err
			}
			if err := sendOne(ctx, p, rec, append([]byte(nil), sc.Bytes()...)); err != nil {
				return err
			}
		}
		return sc.Err()
	}
	var rng *rand.Rand
	if o.payload == "random" {
		rng = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), rec.first))
	}
	for i := 0; i < o.count; i++ {
		if err := pace(i); err != nil {
			return err
		}
		if err := sendOne(ctx, p, rec, generate(o.source, rec.first+uint64(i), o.size, rng)); err != nil {
			return err
		}
	}
	return nil
}

// sourceRun is one publisher of a (possibly multi-source) run.
type sourceRun struct {
	source     string
	session    string
	flightOver atomic.Int64 // FlightOver events (notify)
	rec        *recorder
	stats      publisher.Stats
	answered   []int
	intragroup []string // per group that answered, the intragroup behaviour it applies
	sendErr    error
	flushErr   error
}

// publish registers, sends, waits for stability and records the outcome.
func (r *sourceRun) publish(ctx context.Context, o options, groups [][]string, behaviour quorum.Behavior, log *slog.Logger, stdin io.Reader) {
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Intergroup, cfg.FlightSize, cfg.Logger = r.source, groups, behaviour, o.flight, log
	cfg.OnStable = r.rec.stable
	cfg.StateFile = o.stateFile
	cfg.TLS, cfg.Token = o.tls, o.token
	cfg.Flight, cfg.FlightSizeBytes, cfg.StabilityLifetime = o.behavior, o.flightBytes, o.lifetime
	cfg.RegID, cfg.SessionID = o.regID, o.session
	cfg.OnFlightSize = func(e publisher.FlightEvent) {
		r.flightOver.Add(boolInt(e.State == publisher.FlightOver))
		log.Info("flight size", "source", r.source, "state", e.State, "in_flight", e.InFlight, "in_flight_bytes", e.InFlightBytes)
	}
	cfg.OnUnstable = func(e publisher.Unstable) {
		log.Warn("messages not stable", "source", r.source, "first", e.First, "last", e.Last, "reason", e.Reason, "group", e.Group, "store", e.Store)
	}
	cfg.ReceiverPaced = publisher.Pacing(o.paced)
	cfg.Intragroup = o.intra
	if o.stateFile != "" && o.sources > 1 {
		cfg.StateFile = o.stateFile + "." + r.source
	}
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		r.sendErr = err
		return
	}
	defer p.Close()
	r.session = p.Session()
	r.rec.first = p.FirstSeq()
	r.sendErr = send(ctx, p, o, stdin, r.rec)
	r.flushErr = p.Flush(ctx)
	if r.sendErr == nil && r.flushErr == nil {
		// Stable already; give the other groups a moment to confirm too, so
		// every group holds a copy (it does not change the exit status).
		grace, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = p.WaitAllGroups(grace)
		cancel()
	}
	r.stats = p.Stats()
	for _, g := range p.Registration().Groups {
		if g.Answered {
			r.answered = append(r.answered, g.Group)
			r.intragroup = append(r.intragroup, g.Intragroup.String())
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func sendOne(ctx context.Context, p *publisher.Publisher, rec *recorder, payload []byte) error {
	// umpub is its publisher's only sender, so the sequence number Send
	// will assign is known: record the send time first, or a fast
	// stability report could find no send time for it.
	seq := rec.next()
	rec.sent(seq, time.Now(), len(payload))
	got, err := p.Send(ctx, payload)
	if err != nil {
		rec.unsend(seq, len(payload))
		return err
	}
	if got != seq {
		return fmt.Errorf("internal error: sent sequence %d, expected %d", got, seq)
	}
	return nil
}

// generate makes a payload of exactly size bytes that names its source and
// sequence number, so a reader can check what it got.
func generate(source string, seq uint64, size int, rng *rand.Rand) []byte {
	b := make([]byte, size)
	head := fmt.Sprintf("%s #%d ", source, seq)
	n := copy(b, head)
	if rng == nil {
		for i := n; i < size; i++ {
			b[i] = '.'
		}
		return b
	}
	// Eight random bytes per step: a byte per step cost a benchmark's
	// publisher a sixth of a core at 1 KiB and 45,000 msgs/s, taken from
	// the stores on the same machine.
	var word [8]byte
	for i := n; i < size; i += 8 {
		binary.LittleEndian.PutUint64(word[:], rng.Uint64())
		copy(b[i:], word[:])
	}
	return b
}

// progress prints a one-line progress display to a terminal every second.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func startProgress(w io.Writer, o options, runs []*sourceRun) *progress {
	p := &progress{done: make(chan struct{})}
	f, ok := w.(*os.File)
	if !ok || o.json {
		return p
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				fmt.Fprint(w, "\r"+strings.Repeat(" ", 60)+"\r")
				return
			case <-t.C:
				sent, stable := 0, 0
				for _, r := range runs {
					a, b := r.rec.counts()
					sent, stable = sent+a, stable+b
				}
				fmt.Fprintf(w, "\rsent %d, stable %d", sent, stable)
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}

func printSummary(w io.Writer, s summary, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "source %s: sent %d, stable %d", s.Source, s.Sent, s.Stable)
	if s.Sent > 0 {
		fmt.Fprintf(w, " (sequence numbers %d-%d)", s.FirstSeq, s.LastSeq)
	}
	fmt.Fprintf(w, " in %.2fs: %.0f msgs/s, %.2f MB/s\n", s.ElapsedS, s.MsgsPerS, s.MBPerS)
	fmt.Fprintf(w, "publish-to-stable latency: p50 %dus, p90 %dus, p99 %dus, p99.9 %dus, max %dus\n",
		s.LatencyUS.P50, s.LatencyUS.P90, s.LatencyUS.P99, s.LatencyUS.P999, s.LatencyUS.Max)
	fmt.Fprintf(w, "confirmed per group: %v\n", s.GroupsConfirmed)
}
