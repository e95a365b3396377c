package publisher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
)

// The sweeper wakes a stream on a shared connection only once the group
// has been quiet for it long enough that its check could act: half its
// bound (to ping, then to give up), or a base bound when the bound has
// grown (to ask the other members). While the connection is heard, the
// ten thousand streams on it sleep.
func TestSweeperWakesOnlyQuietStreams(t *testing.T) {
	now := time.Now()
	base := time.Second
	cases := []struct {
		name  string
		own   time.Duration // since the stream's own last answer
		link  time.Duration // since the shared connection was last heard
		bound time.Duration
		want  bool
	}{
		{"the connection heard just now", 5 * time.Second, 0, base, false},
		{"own answer just now", 0, 5 * time.Second, base, false},
		{"quiet under half the bound", 5 * time.Second, 400 * time.Millisecond, base, false},
		{"quiet half the bound: time to ping", 5 * time.Second, 600 * time.Millisecond, base, true},
		{"grown bound, quiet under a base bound", 5 * time.Second, 900 * time.Millisecond, 16 * base, false},
		{"grown bound, quiet a base bound: time to probe", 5 * time.Second, 1100 * time.Millisecond, 16 * base, true},
		{"own silence past sharedLiveness though others are answered", sharedLiveness + time.Second, 0, base, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &group{lastHeard: now.Add(-tc.own)}
			heard := now.Add(-tc.link)
			e := &sweptStream{g: g, heard: func() time.Time { return heard }, bound: tc.bound, base: base}
			if got := e.due(now); got != tc.want {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
}

// A sweep wakes the due streams once, however many sweeps pass before
// they look, and the sweeper's goroutine ends with its last stream.
func TestSweeperWakesOnceAndEnds(t *testing.T) {
	var w sweeper
	now := time.Now()
	quiet := &group{lastHeard: now.Add(-time.Hour)}
	busy := &group{lastHeard: now}
	heard := func() time.Time { return time.Time{} }
	quietWake, doneQuiet := w.add(quiet, heard, time.Second, time.Second)
	busyWake, doneBusy := w.add(busy, nil, time.Second, time.Second)
	w.sweep(now)
	w.sweep(now)
	if len(quietWake) != 1 {
		t.Errorf("the quiet stream has %d wake-ups waiting, want 1", len(quietWake))
	}
	if len(busyWake) != 0 {
		t.Errorf("the stream heard just now was woken")
	}
	doneQuiet()
	doneBusy()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper still runs with no stream left")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Publishers sharing connections leave a leader that went silent behind
// live sockets within a few bounds: their streams have no ticker of their
// own, and only the sweeper's wake-up finds the silence.
func TestSharedConnectionsLeaveASilentLeader(t *testing.T) {
	testmain.Slow(t)
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	list, proxy := behindFreezer(t, c, leader.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := NewConnections()
	const sources = 20
	pubs := make([]*Publisher, sources)
	for i := range pubs {
		cfg := DefaultConfig()
		cfg.Source = fmt.Sprintf("swept-%d", i)
		cfg.Groups = [][]string{list}
		cfg.Connections = conns
		p, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		pubs[i] = p
	}
	sendAll := func(seq int) time.Duration {
		t.Helper()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, sources)
		for i, p := range pubs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.Send(ctx, []byte(fmt.Sprintf("m%d", seq))); err != nil {
					errs <- fmt.Errorf("source %d send %d: %w", i, seq, err)
					return
				}
				if err := p.Flush(ctx); err != nil {
					errs <- fmt.Errorf("source %d flush after %d: %w (stats %+v)", i, seq, err, p.Stats())
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	for seq := range 10 {
		sendAll(seq)
	}
	if got := pubs[0].groups[0].client.Leader(); got != proxy.addr() {
		t.Fatalf("publishing through %s, want the leader behind the proxy %s", got, proxy.addr())
	}
	proxy.frozen.Store(true)
	c.Kill(leader.Name())
	took := sendAll(10)
	bound := DefaultConfig().AckTimeout
	t.Logf("every source stable again after %v (bound %v)", took, bound)
	if took > 20*bound {
		t.Fatalf("the publishers took %v to leave a silent leader, want a few bounds of %v and an election", took, bound)
	}
}

// The learner of shared connections asks for the groups of open
// publishers only, forgets a closed publisher's groups, and its goroutine
// ends with the last of them.
func TestLearnerForgetsClosedPublishers(t *testing.T) {
	var l learner
	openCtx, closeOpen := context.WithCancel(context.Background())
	defer closeOpen()
	closedCtx, closeClosed := context.WithCancel(context.Background())
	open := &group{p: &Publisher{ctx: openCtx}}
	closed := &group{p: &Publisher{ctx: closedCtx}}
	l.add(open)
	l.add(closed)
	closeClosed()
	if got := l.round(nil); len(got) != 1 || got[0] != open {
		t.Fatalf("a round asks for %d groups, want only the open publisher's", len(got))
	}
	closeOpen()
	deadline := time.Now().Add(3 * learnInterval)
	for {
		l.mu.Lock()
		running, left := l.running, len(l.groups)
		l.mu.Unlock()
		if !running && left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the learner still runs (%v) with %d groups after every publisher closed", running, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
