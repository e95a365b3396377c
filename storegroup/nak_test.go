package storegroup_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
	"umstore/wire"
)

// keepFive makes a group keep at most five messages a source, released
// quickly.
func keepFive(cfg *storegroup.Config) {
	cfg.RetentionMaxMessages = 5
	cfg.RetentionMaxBytes = 0
	cfg.RetentionInterval = 100 * time.Millisecond
}

// groupTrimmed waits until group's leader has released source through at
// least through.
func groupTrimmed(t *testing.T, c *clustertest.Cluster, group int, source string, through uint64) {
	t.Helper()
	c.Eventually(30*time.Second, fmt.Sprintf("group %d releases %s through %d", group, source, through), func() bool {
		l := c.Leader(group)
		if l == nil {
			return false
		}
		info, ok, _ := l.Repository().Source(source)
		return ok && info.TrimmedThrough >= through
	})
}

// A store answers a Publish of sequence numbers that retention released
// while they were a gap (the group never held them, and never will) with a
// Nak naming them; the numbers it held until retention released them, and
// the held ones, with an Ack, however often they are sent: they were
// stable in the group. Before the Nak, everything was acknowledged (the
// Ack claimed gaps stable); before the record of released gaps, released
// held numbers were Naked (a publisher whose Ack was lost on the way could
// confirm them nowhere once every group had released them).
func TestStoreNaksWhatRetentionReleased(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		keepFive(cfg)
		cfg.RepairInterval = 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	payloads := make([][]byte, 20)
	for i := range payloads {
		payloads[i] = []byte(fmt.Sprint(i + 1))
	}
	// 1..5 and 11..20: 6..10 stay a gap. Keeping five, retention releases
	// the oldest ten held (1..5, 11..15): through 15, the gap with them.
	if err := c.PublishDirect(ctx, 1, "released", 1, payloads[:5]); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishDirect(ctx, 1, "released", 11, payloads[10:]); err != nil {
		t.Fatal(err)
	}
	groupTrimmed(t, c, 1, "released", 15)

	ic := registerIntragroup(t, ctx, c, "released", "")
	tests := []struct {
		first, last uint64
		lost        *wire.Range // nil: an Ack
	}{
		{1, 20, &wire.Range{From: 6, To: 10}},
		{10, 17, &wire.Range{From: 10, To: 10}},
		{1, 5, nil},   // held, then released: stable in the group
		{11, 15, nil}, // likewise
		{16, 20, nil},
		{16, 20, nil}, // again: still a no-op, still acknowledged
		{21, 22, nil},
	}
	for _, tt := range tests {
		ic.reqID++
		if err := ic.conn.Send(&wire.Publish{ReqID: ic.reqID, Source: "released", FirstSeq: tt.first, Payloads: payloads[:tt.last-tt.first+1]}); err != nil {
			t.Fatal(err)
		}
		m := ic.answer(ic.reqID, 20*time.Second)
		switch a := m.(type) {
		case *wire.Nak:
			if tt.lost == nil || a.FirstSeq != tt.first || a.LastSeq != tt.last || len(a.Lost) != 1 || a.Lost[0] != *tt.lost {
				t.Fatalf("Publish %d..%d answered %+v, want lost %v", tt.first, tt.last, a, tt.lost)
			}
		case *wire.Ack:
			if tt.lost != nil {
				t.Fatalf("Publish %d..%d answered %+v, want a Nak of %v", tt.first, tt.last, a, *tt.lost)
			}
		default:
			t.Fatalf("Publish %d..%d answered %#v", tt.first, tt.last, m)
		}
	}
}

// gate is a TCP proxy to one address that the test opens and shuts: while
// shut it closes every connection it accepts, and shutting it cuts the
// ones it carries.
type gate struct {
	ln    net.Listener
	to    string
	open  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
}

func newGate(t *testing.T, to string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, to: to}
	t.Cleanup(func() { ln.Close(); g.shut() })
	go g.serve()
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

func (g *gate) shut() {
	g.open.Store(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

func (g *gate) serve() {
	for {
		in, err := g.ln.Accept()
		if err != nil {
			return
		}
		if !g.open.Load() {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", g.to)
		if err != nil {
			in.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, in, out)
		g.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// A publisher that could not reach group 2 while group 2 copied its
// messages from group 1 (intergroup repair) and released most of them
// (retention) sends them to group 2 once it can: group 2 held them until
// it released them, so it acknowledges them, and the publisher counts
// every message confirmed by both groups, none lost. Before the record of
// released gaps group 2 Naked what it released, and the publisher
// reported 15 messages lost in group 2.
func TestPublisherResendOfReleasedMessagesIsAcknowledged(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) {
		if cfg.Group == 2 {
			keepFive(cfg)
			cfg.RepairInterval = 200 * time.Millisecond
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var gates []*gate
	var group2 []string
	for _, addr := range c.Addrs()[1] {
		g := newGate(t, addr)
		gates = append(gates, g)
		group2 = append(group2, g.addr())
	}

	var mu sync.Mutex
	var lost []publisher.Unstable
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "naked", [][]string{c.Addrs()[0], group2}
	cfg.RegisterTimeout = 500 * time.Millisecond
	cfg.OnUnstable = func(u publisher.Unstable) {
		mu.Lock()
		defer mu.Unlock()
		lost = append(lost, u)
	}
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 1; i <= 20; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	groupTrimmed(t, c, 2, "naked", 15)

	for _, g := range gates {
		g.open.Store(true)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := p.WaitAllGroups(wctx); err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("group 2 never confirmed what it held and released: %v (reported unstable: %+v)", err, lost)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lost) > 0 {
		t.Fatalf("reported %+v lost; group 2 held every message before releasing it", lost)
	}
	if st := p.Stats(); st.Lost != 0 || st.Stable != 20 || st.Confirmed[1] != 20 {
		t.Fatalf("stats %+v: want none lost, all 20 stable and confirmed by group 2", st)
	}
}
