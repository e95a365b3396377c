package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/cli"
	"umstore/internal/groupclient"
	"umstore/placement"
	"umstore/publisher"
	"umstore/receiver"
	"umstore/wire"
)

// Environment of a flood helper process (TestLimitsFloodHelper).
const (
	floodFromEnv  = "UMSTORE_E2E_FLOOD_FROM"  // the local address connections leave from
	floodToEnv    = "UMSTORE_E2E_FLOOD_TO"    // comma-separated client addresses, used in turn
	floodCountEnv = "UMSTORE_E2E_FLOOD_COUNT" // how many connections to open
)

// floodSummary is what a flood helper reports once every connection it
// opened has had its answer to Hello.
type floodSummary struct {
	From      string `json:"from"`
	Welcomed  int    `json:"welcomed"`   // answered Welcome: held open, idle
	Refused   int    `json:"refused"`    // answered an Error (a limit)
	Closed    int    `json:"closed"`     // closed or reset without an answer
	NoAnswer  int    `json:"no_answer"`  // no answer within the wait (a store that stopped accepting)
	DialError int    `json:"dial_error"` // the connection could not be opened
}

// TestLimitsFloodHelper is not a test: re-executed by TestLimits with the
// flood environment set, it opens the connections of one flooding client,
// says Hello on each, prints a summary and holds the connections until its
// standard input closes. A test process may hold 20,000 descriptors, so a
// flood of 20,000 takes two of them.
func TestLimitsFloodHelper(t *testing.T) {
	from, to := os.Getenv(floodFromEnv), os.Getenv(floodToEnv)
	if from == "" || to == "" {
		t.Skip("a helper process of TestLimits")
	}
	var n int
	fmt.Sscan(os.Getenv(floodCountEnv), &n)
	targets := strings.Split(to, ",")
	hello, err := wire.Encode(&wire.Hello{Version: wire.Version, Client: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	sum := floodSummary{From: from}
	count := func(c *int) { mu.Lock(); *c++; mu.Unlock() }
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 200; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
			for i := range work {
				nc, err := d.Dial("tcp", targets[i%len(targets)])
				if err != nil {
					count(&sum.DialError)
					continue
				}
				_ = nc.SetDeadline(time.Now().Add(15 * time.Second))
				var m wire.Message
				if _, err = nc.Write(hello); err == nil {
					m, err = wire.NewConn(nc, 0).Read()
				}
				var ne net.Error
				switch {
				case err == nil && m.Type() == wire.TypeWelcome:
					_ = nc.SetDeadline(time.Time{})
					mu.Lock()
					sum.Welcomed++
					held = append(held, nc)
					mu.Unlock()
					continue
				case err == nil && m.Type() == wire.TypeError:
					count(&sum.Refused)
				case errors.As(err, &ne) && ne.Timeout():
					count(&sum.NoAnswer)
				default:
					count(&sum.Closed)
				}
				nc.Close()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	out, _ := json.Marshal(sum)
	fmt.Printf("FLOOD %s\n", out)
	_, _ = io.Copy(io.Discard, os.Stdin) // hold the connections until told
	for _, nc := range held {
		nc.Close()
	}
}

// flooder is a running flood helper process.
type flooder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	sum   chan floodSummary
}

// startFlood re-executes the test binary as a flood helper opening n
// connections from the local address from to the addresses to.
func startFlood(t *testing.T, from string, to []string, n int) *flooder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLimitsFloodHelper$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), floodFromEnv+"="+from, floodToEnv+"="+strings.Join(to, ","), fmt.Sprintf("%s=%d", floodCountEnv, n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &flooder{cmd: cmd, stdin: stdin, sum: make(chan floodSummary, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "FLOOD "); ok {
				var s floodSummary
				if json.Unmarshal([]byte(rest), &s) == nil {
					f.sum <- s
				}
			}
		}
	}()
	t.Cleanup(f.stop)
	return f
}

// stop closes the helper's connections and waits for it.
func (f *flooder) stop() {
	if f.stdin == nil {
		return
	}
	f.stdin.Close()
	f.stdin = nil
	done := make(chan struct{})
	go func() { f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		f.cmd.Process.Kill()
		<-done
	}
}

// httpGet fetches an admin URL within a short timeout.
func httpGet(url string) (string, error) {
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// TestLimits runs a planned two-host deployment and attacks host A as a
// careless or hostile client would. 20,000 connections say Hello and stay
// idle (from two processes, as one may hold 20,000 descriptors): host A
// keeps serving (its stores answer, a publisher publishes and reads back,
// /healthz answers) and counts what it refused. A client trickling a frame
// a byte a second is cut within the frame bound (30s). A 20 MiB payload
// is refused by the SDK with ErrTooLarge and later messages flow; one of
// exactly wire.MaxPayload is acknowledged and reads back; a raw Publish
// over the limit gets a too-large Error.
func TestLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)
	dep, err := placement.Load(d.deploy)
	if err != nil {
		t.Fatal(err)
	}
	groups := cli.DeploymentGroups(dep)
	var onA []string
	for _, r := range dep.StoresOn("A") {
		onA = append(onA, r.ClientAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The slow client runs through the whole test: a frame announced,
	// then one byte a second.
	slowCut := make(chan time.Duration, 1)
	slowStart := time.Now()
	go trickle(t, ctx, onA[0], slowCut)

	t.Run("20000 idle connections", func(t *testing.T) {
		rssBefore := rssOf(d.a.cmd.Process.Pid)
		floods := []*flooder{
			startFlood(t, "127.0.0.101", onA, 10000),
			startFlood(t, "127.0.0.102", onA, 10000),
		}
		for _, f := range floods {
			select {
			case s := <-f.sum:
				t.Logf("flood from %s: %+v", s.From, s)
			case <-ctx.Done():
				t.Fatal("a flood helper did not finish opening its connections")
			}
		}
		t.Logf("host A's resident memory: %s before the flood, %s under it", rssBefore, rssOf(d.a.cmd.Process.Pid))
		// Under the flood: host A's admin server and every store of host
		// A answer, and a publisher is served by every group.
		if _, err := httpGet("http://" + d.a.admin + "/healthz"); err != nil {
			t.Fatalf("/healthz of host A under the flood: %v", err)
		}
		for _, addr := range onA {
			probe := &wire.Dialer{Client: "e2e", Timeout: 5 * time.Second}
			conn, _, err := probe.Dial(ctx, addr)
			if err != nil {
				t.Fatalf("store %s of host A under the flood: %v", addr, err)
			}
			conn.Close()
		}
		pub := newE2EPublisher(t, ctx, groups, "flooded")
		for i := 1; i <= 200; i++ {
			if _, err := pub.Send(ctx, []byte(fmt.Sprintf("flooded %d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.WaitAllGroups(ctx); err != nil {
			t.Fatalf("publishing under the flood: %v", err)
		}
		readBack(t, ctx, groups, "flooded", map[uint64][]byte{1: []byte("flooded 1"), 200: []byte("flooded 200")}, 200)
		metrics, err := httpGet("http://" + d.a.admin + "/metrics")
		if err != nil {
			t.Fatalf("/metrics of host A under the flood: %v", err)
		}
		if !refusalsCounted(metrics) {
			t.Fatalf("host A's /metrics counts no refused client connection:\n%s", grepLines(metrics, "umstore_client_connections"))
		}
	})

	t.Run("payload limits", func(t *testing.T) {
		big := newE2EPublisher(t, ctx, groups, "payloads")
		if seq, err := big.Send(ctx, make([]byte, 20<<20)); !errors.Is(err, publisher.ErrTooLarge) {
			t.Fatalf("Send of 20 MiB = %d, %v; want ErrTooLarge", seq, err)
		}
		want := map[uint64][]byte{}
		for _, p := range [][]byte{bytes.Repeat([]byte("M"), wire.MaxPayload), []byte("after the largest")} {
			seq, err := big.Send(ctx, p)
			if err != nil {
				t.Fatalf("Send of %d bytes: %v", len(p), err)
			}
			want[seq] = p
		}
		if err := big.WaitAllGroups(ctx); err != nil {
			t.Fatalf("the largest payload and the one after it: %v", err)
		}
		if want[1] == nil || want[2] == nil {
			t.Fatalf("the refused payload took a sequence number: got %d and %d", len(want[1]), len(want[2]))
		}
		readBack(t, ctx, groups, "payloads", want, 2)
		rawPublishOverTheLimit(t, ctx, groups[0])
	})

	t.Run("a byte a second", func(t *testing.T) {
		select {
		case took := <-slowCut:
			if took < 25*time.Second || took > 45*time.Second {
				t.Fatalf("the slow client was cut %v after its frame began; the bound is 30s", took)
			}
			t.Logf("the slow client was cut %v after its frame began", took)
		case <-time.After(time.Until(slowStart.Add(60 * time.Second))):
			t.Fatal("a client sending a byte a second was never cut")
		}
	})
}

// trickle connects to addr, announces a 1000-byte frame and sends it a
// byte a second; it reports how long after the first byte the store
// closed the connection.
func trickle(t *testing.T, ctx context.Context, addr string, cut chan<- time.Duration) {
	dd := &wire.Dialer{Client: "slow", Timeout: 5 * time.Second}
	conn, _, err := dd.Dial(ctx, addr)
	if err != nil {
		t.Errorf("slow client: %v", err)
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	raw := conn.NetConn()
	frame := binary.BigEndian.AppendUint32(nil, 1000)
	frame = append(frame, byte(wire.TypeProbe))
	frame = append(frame, make([]byte, 999)...)
	start := time.Now()
	var closed atomic.Bool
	go func() {
		for _, b := range frame {
			if closed.Load() || ctx.Err() != nil {
				return
			}
			if _, err := raw.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	var buf [64]byte
	for {
		if _, err := raw.Read(buf[:]); err != nil {
			closed.Store(true)
			if ctx.Err() == nil {
				cut <- time.Since(start)
			}
			return
		}
	}
}

func newE2EPublisher(t *testing.T, ctx context.Context, groups [][]string, source string) *publisher.Publisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("publisher for %s: %v", source, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// readBack reads 1..n of source until every message is there (an Ack comes
// before the leader's repository commits), checking the payloads in want.
func readBack(t *testing.T, ctx context.Context, groups [][]string, source string, want map[uint64][]byte, n int) {
	t.Helper()
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lastErr error
	for ctx.Err() == nil {
		got := 0
		lastErr = r.Read(ctx, 1, uint64(n), func(m receiver.Message) error {
			if w, ok := want[m.Seq]; ok && !bytes.Equal(m.Payload, w) {
				return fmt.Errorf("seq %d: read back %d bytes, want %d", m.Seq, len(m.Payload), len(w))
			}
			got++
			return nil
		})
		if lastErr == nil && got == n {
			return
		}
		if lastErr != nil && !errors.Is(lastErr, receiver.ErrMissing) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("reading back 1..%d of %s: %v", n, source, lastErr)
}

// rawPublishOverTheLimit registers a source at the group's leader and
// publishes a payload one byte over wire.MaxPayload: the store answers a
// too-large Error and stores nothing.
func rawPublishOverTheLimit(t *testing.T, ctx context.Context, addrs []string) {
	t.Helper()
	gc := groupclient.New(1, addrs, &wire.Dialer{Client: "raw", Timeout: 5 * time.Second})
	conn, _, err := gc.Open(ctx, &wire.Register{ReqID: 1, Source: "raw-big", Session: "raw"}, groupclient.OpenOptions{Reply: wire.TypeRegistered})
	if err != nil {
		t.Fatalf("register at group 1's leader: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	call := func(m wire.Message) wire.Message {
		t.Helper()
		if err := conn.Send(m); err != nil {
			t.Fatal(err)
		}
		r, err := conn.Read()
		if err != nil {
			t.Fatalf("no answer to %T: %v", m, err)
		}
		return r
	}
	over := &wire.Publish{ReqID: 2, Source: "raw-big", FirstSeq: 1, Payloads: [][]byte{make([]byte, wire.MaxPayload+1)}}
	if e, ok := call(over).(*wire.Error); !ok || e.Code != wire.CodeTooLarge {
		t.Fatalf("a raw Publish one byte over wire.MaxPayload: got %#v, want a %s Error", e, wire.CodeTooLarge)
	}
	if rep, ok := call(&wire.Fetch{ReqID: 3, Source: "raw-big", From: 1, To: 1}).(*wire.FetchReply); !ok || rep.HighSeq != 0 {
		t.Fatalf("after the refusal: %#v, want nothing stored", rep)
	}
}

// refusalsCounted reports whether a /metrics page counts a refused client
// connection.
func refusalsCounted(metrics string) bool {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "umstore_client_connections_refused_total{") && !strings.HasSuffix(l, " 0") {
			return true
		}
	}
	return false
}

// rssOf returns a process's resident memory as /proc reports it.
func rssOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "?"
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
