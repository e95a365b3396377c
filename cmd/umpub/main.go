// Command umpub publishes messages to umstore through the publisher SDK:
// generated messages (--count, --size, --rate) or lines from standard input
// (--stdin). It reports how many became stable and how fast, and exits
// non-zero unless every message sent became stable within --timeout.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"umstore/internal/cli"
	"umstore/internal/formats"
	"umstore/internal/pace"
	"umstore/internal/version"
	"umstore/publisher"
	"umstore/quorum"
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

// run is umpub with args, reading stdin and writing to stdout and stderr;
// it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	fs := bindFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(stderr, "umpub", err)
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, "umpub", fmt.Sprintf("unexpected argument %q (every option is a --flag)", fs.Arg(0)))
	}
	if o.showVersion {
		fmt.Fprintln(stdout, "umpub", version.String())
		fmt.Fprint(stdout, formats.String())
		return 0
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	groups, behaviour, log, err := o.resolve(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}
	if err := servePprof(o.pprofAddr, log); err != nil {
		fmt.Fprintln(stderr, "umpub:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.deadline())
	defer cancel()
	runs, registering := publishAll(ctx, o, groups, behaviour, log, stdin, stderr)
	return report(stdout, stderr, o, runs, registering)
}

// publishAll publishes on every source of the run at once (--source, or
// NAME-1 .. NAME-K with --sources), each with its own publisher and its
// share of --rate, showing progress on stderr, and returns the runs once
// all have ended, with how long the sources took to register (with
// --sources, every source registers before any sends; 0 with one source).
func publishAll(ctx context.Context, o options, groups [][]string, behaviour quorum.Behavior, log *slog.Logger, stdin io.Reader, stderr io.Writer) ([]*sourceRun, time.Duration) {
	names := []string{o.source}
	if o.sources > 1 {
		names = names[:0]
		for i := 1; i <= o.sources; i++ {
			names = append(names, fmt.Sprintf("%s-%d", o.source, i))
		}
	}
	runs := make([]*sourceRun, len(names))
	lat := newHistograms()
	for i, name := range names {
		runs[i] = &sourceRun{source: name, rec: newRecorder(lat)}
	}
	perSource := o
	perSource.rate = o.rate / float64(len(names))
	var conns *publisher.Connections
	if o.connections == "shared" {
		conns = publisher.NewConnections()
	}
	progress := startProgress(stderr, o, runs)
	var start *startLine
	if len(runs) > 1 {
		start = newStartLine(len(runs))
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.publish(ctx, perSource, groups, behaviour, conns, log, stdin, start)
		}()
	}
	wg.Wait()
	progress.stop()
	return runs, start.span()
}

// report prints the runs' merged summary on stdout and what stopped them
// on stderr, and returns the exit status: 0 when every message sent
// became stable, 1 when not.
func report(stdout, stderr io.Writer, o options, runs []*sourceRun, registering time.Duration) int {
	sum, sendErr, flushErr := mergeRuns(o.source, runs)
	sum.RegisterS = registering.Seconds()
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

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
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
		return pace.Until(ctx, start.Add(time.Duration(i)*interval))
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

// A startLine holds a multi-source run's sources until every one of them
// has registered (or failed to), so that they send together: the run's
// msgs/s is then the cost of K live sources, and the registrations'
// span is reported apart (a UM application creates its sources first,
// then publishes on them).
type startLine struct {
	mu      sync.Mutex
	waiting int
	began   time.Time
	done    time.Duration // how long the registrations took, once all are in
	all     chan struct{}
}

func newStartLine(n int) *startLine {
	return &startLine{waiting: n, began: time.Now(), all: make(chan struct{})}
}

// registered counts one source in and waits for the others (or ctx). A
// nil line waits for nothing.
func (l *startLine) registered(ctx context.Context) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.waiting--
	if l.waiting == 0 {
		l.done = time.Since(l.began)
		close(l.all)
	}
	l.mu.Unlock()
	select {
	case <-l.all:
	case <-ctx.Done():
	}
}

// span returns how long every source took to register, 0 if not all did.
func (l *startLine) span() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
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

// publish registers, sends, waits for stability and records the outcome;
// conns, when set, are the connections the run's sources share.
func (r *sourceRun) publish(ctx context.Context, o options, groups [][]string, behaviour quorum.Behavior, conns *publisher.Connections, log *slog.Logger, stdin io.Reader, start *startLine) {
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Intergroup, cfg.FlightSize, cfg.Logger = r.source, groups, behaviour, o.flight, log
	cfg.OnStable = r.rec.stable
	cfg.StateFile = o.stateFile
	cfg.TLS, cfg.Token = o.tls, o.token
	cfg.Connections = conns
	cfg.Flight, cfg.FlightSizeBytes, cfg.StabilityLifetime = o.behavior, o.flightBytes, o.lifetime
	cfg.RegID, cfg.StoreRegIDs, cfg.SessionID = o.regID, o.regIDs, o.session
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
	start.registered(ctx)
	if err != nil {
		r.sendErr = err
		return
	}
	defer p.Close()
	r.session = p.Session()
	r.rec.first = p.FirstSeq()
	r.sendErr = send(ctx, p, o, stdin, r.rec)
	r.flushErr = p.Flush(ctx)
	if r.sendErr == nil && r.flushErr == nil && allConnected(p.Stats()) {
		// Stable already; give the other groups a moment to confirm too, so
		// every group holds a copy (it does not change the exit status). A
		// group not registered now (its host down) gets its copies by
		// repair: waiting for it would only cost the user the grace.
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

// allConnected reports whether the publisher is registered with every group.
func allConnected(st publisher.Stats) bool {
	for _, c := range st.Connected {
		if !c {
			return false
		}
	}
	return true
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
	fmt.Fprintf(w, " in %.2fs: %.0f stable msgs/s, %.2f MB/s\n", s.ElapsedS, s.MsgsPerS, s.MBPerS)
	if s.Sources > 1 && s.RegisterS > 0 {
		fmt.Fprintf(w, "%d sources registered in %.2fs, before any sent (not in the span above)\n", s.Sources, s.RegisterS)
	}
	fmt.Fprintf(w, "publish-to-stable latency: p50 %dus, p90 %dus, p99 %dus, p99.9 %dus, max %dus\n",
		s.LatencyUS.P50, s.LatencyUS.P90, s.LatencyUS.P99, s.LatencyUS.P999, s.LatencyUS.Max)
	fmt.Fprintf(w, "confirmed per group: %v\n", s.GroupsConfirmed)
}
