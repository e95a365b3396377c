package publisher

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
)

// freezer forwards TCP connections to one address until frozen; then it
// keeps every socket open and passes nothing, in either direction, the way
// a SIGSTOPped host's sockets look to its peers.
type freezer struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, to string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln}
	t.Cleanup(f.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.keep(c)
			if f.frozen.Load() {
				continue // accepted, never answered
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			f.keep(up)
			go f.pipe(up, c)
			go f.pipe(c, up)
		}
	}()
	return f
}

func (f *freezer) addr() string { return f.ln.Addr().String() }

func (f *freezer) keep(c net.Conn) {
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
}

// pipe copies from src to dst until frozen; once frozen it stops reading
// and never closes dst.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if f.frozen.Load() {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func (f *freezer) close() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

// behindFreezer returns group 1's store list with the store named leader
// reached through a freezer, listed first, and that freezer.
func behindFreezer(t *testing.T, c *clustertest.Cluster, leader string) ([]string, *freezer) {
	t.Helper()
	var list []string
	var proxy *freezer
	for _, m := range c.Members(1) {
		if m.Name == leader {
			proxy = newFreezer(t, m.ClientAddr)
			list = append([]string{proxy.addr()}, list...)
		} else {
			list = append(list, m.ClientAddr)
		}
	}
	return list, proxy
}

// A publisher whose silence bound has grown (its leader was slow before)
// does not wait that bound out when the leader goes silent for good: the
// other members are asked, one leads, and the publisher goes there within
// about an election, not the grown bound.
func TestSilentLeaderIsLeftWhenAnotherLeads(t *testing.T) {
	startGrown = 16 // a 16 s bound: without asking the others, the publisher waits it out
	t.Cleanup(func() { startGrown = 1 })
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	list, proxy := behindFreezer(t, c, leader.Name())
	cfg := DefaultConfig()
	cfg.Source = "elsewhere"
	cfg.Groups = [][]string{list}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(i int) {
		t.Helper()
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i := range 100 {
		send(i)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.groups[0].client.Leader(); got != proxy.addr() {
		t.Fatalf("publishing through %s, want the leader behind the proxy %s", got, proxy.addr())
	}
	// The leader goes silent behind live sockets, then away: the other two
	// elect a new leader.
	proxy.frozen.Store(true)
	c.Kill(leader.Name())
	start := time.Now()
	send(100)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("stable again after %v (bound %v)", took, 16*cfg.AckTimeout)
	if took > 8*cfg.AckTimeout {
		t.Fatalf("the publisher took %v to publish past a silent leader while another led: it waited out its grown bound", took)
	}
}
