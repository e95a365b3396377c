package connmux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/wire"
)

// store is a scripted store over real TCP: it answers Ping with Pong,
// Register with Registered and Publish with Ack, each with the request's
// ReqID, and records what it read.
type store struct {
	t      *testing.T
	ln     net.Listener
	dials  atomic.Int32
	mu     sync.Mutex
	conns  []*wire.Conn
	frames []wire.Message
	closed chan struct{} // a connection ended (EOF from the client)
	slow   atomic.Int64  // how long the handshake waits (ns): a slow store
}

func newStore(t *testing.T) *store {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &store{t: t, ln: ln, closed: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.dials.Add(1)
			c := wire.NewConn(nc, 0)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(c) }()
		}
	}()
	return s
}

func (s *store) addr() string { return s.ln.Addr().String() }

func (s *store) serve(c *wire.Conn) {
	defer c.Close()
	time.Sleep(time.Duration(s.slow.Load()))
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: "S1", Group: 1}, ""); err != nil {
		return
	}
	for {
		m, err := c.Read()
		if err != nil {
			s.closed <- struct{}{}
			return
		}
		s.mu.Lock()
		s.frames = append(s.frames, m)
		s.mu.Unlock()
		var answer wire.Message
		switch m := m.(type) {
		case *wire.Ping:
			answer = &wire.Pong{ReqID: m.ReqID, Store: "S1", Group: 1, Leading: true}
		case *wire.Register:
			answer = &wire.Registered{ReqID: m.ReqID, Source: m.Source, Group: 1}
		case *wire.Publish:
			answer = &wire.Ack{ReqID: m.ReqID, Source: m.Source, FirstSeq: m.FirstSeq, LastSeq: m.FirstSeq + uint64(len(m.Payloads)) - 1}
		}
		if answer != nil {
			_ = c.Send(answer)
		}
	}
}

// push sends m on every connection the store has (frames a store sends
// unasked).
func (s *store) push(m wire.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Send(m)
	}
}

// dropAll closes every connection from the store's side.
func (s *store) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *store) read() []wire.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wire.Message(nil), s.frames...)
}

func dialer() *wire.Dialer { return &wire.Dialer{Client: "connmux test", Timeout: 2 * time.Second} }

func dial(t *testing.T, p *Pool, addr string) *Lane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, w, err := p.Dial(ctx, dialer(), addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if w.Store != "S1" {
		t.Fatalf("welcome from %q, want S1", w.Store)
	}
	return l
}

func readWithin(t *testing.T, l *Lane, d time.Duration) (wire.Message, error) {
	t.Helper()
	_ = l.SetReadDeadline(time.Now().Add(d))
	defer l.SetReadDeadline(time.Time{})
	return l.Read()
}

// Many sessions dialing one store at once share one dial, and each reads
// only the answers to its own requests, under its own ReqIDs, though every
// lane numbers its requests from 1.
func TestLanesShareOneConnectionAndReadTheirOwnAnswers(t *testing.T) {
	s := newStore(t)
	p := NewPool()
	const n = 40
	lanes := make([]*Lane, n)
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Add(1)
		go func() { defer wg.Done(); lanes[i] = dial(t, p, s.addr()) }()
	}
	wg.Wait()
	if d := s.dials.Load(); d != 1 {
		t.Fatalf("%d connections for %d lanes, want 1", d, n)
	}
	errs := make(chan error, n)
	for i, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := fmt.Sprintf("src-%d", i)
			for req := uint64(1); req <= 20; req++ {
				if err := l.Send(&wire.Publish{ReqID: req, Source: src, FirstSeq: req, Payloads: [][]byte{[]byte("x")}}); err != nil {
					errs <- err
					return
				}
				m, err := readWithin(t, l, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				a, ok := m.(*wire.Ack)
				if !ok || a.ReqID != req || a.Source != src || a.FirstSeq != req {
					errs <- fmt.Errorf("lane %d request %d answered %#v", i, req, m)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, m := range s.read() {
		if id, _ := wire.ReqIDOf(m); id>>laneShift == 0 {
			t.Fatalf("the store read a ReqID without a lane number: %#v", m)
		}
	}
}

// Frames without a ReqID reach the lane that registered their source; a
// frame for the connection as a whole (ReqID 0) reaches every lane.
func TestFramesWithoutReqIDRouting(t *testing.T) {
	s := newStore(t)
	p := NewPool()
	a, b := dial(t, p, s.addr()), dial(t, p, s.addr())
	for _, r := range []struct {
		l   *Lane
		src string
	}{{a, "a"}, {b, "b"}} {
		if err := r.l.Send(&wire.Register{ReqID: 1, Source: r.src, Session: "s"}); err != nil {
			t.Fatal(err)
		}
		if m, err := readWithin(t, r.l, 5*time.Second); err != nil || m.(*wire.Registered).Source != r.src {
			t.Fatalf("register %s: %v %#v", r.src, err, m)
		}
	}
	s.push(&wire.HeldBack{Source: "b", Reason: "paced"})
	s.push(&wire.NotLeader{Leader: "elsewhere:1"})
	if m, err := readWithin(t, b, 5*time.Second); err != nil || m.(*wire.HeldBack).Source != "b" {
		t.Fatalf("lane b read %#v, %v; want its HeldBack", m, err)
	}
	for name, l := range map[string]*Lane{"a": a, "b": b} {
		m, err := readWithin(t, l, 5*time.Second)
		if nl, ok := m.(*wire.NotLeader); err != nil || !ok || nl.Leader != "elsewhere:1" {
			t.Fatalf("lane %s read %#v, %v; want the NotLeader every lane gets", name, m, err)
		}
	}
	if m, err := readWithin(t, a, 100*time.Millisecond); err == nil {
		t.Fatalf("lane a read %#v, which was lane b's", m)
	}
}

// Closing a lane ends only that lane; the last one's close sends what it
// wrote last and then closes the connection, and the next dial opens a
// new one.
func TestCloseEndsOnlyItsLaneAndTheLastClosesTheConnection(t *testing.T) {
	s := newStore(t)
	p := NewPool()
	a, b := dial(t, p, s.addr()), dial(t, p, s.addr())
	a.Close()
	if _, err := a.Read(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed lane: %v, want net.ErrClosed", err)
	}
	if err := b.Send(&wire.Ping{ReqID: 9}); err != nil {
		t.Fatal(err)
	}
	if m, err := readWithin(t, b, 5*time.Second); err != nil || m.(*wire.Pong).ReqID != 9 {
		t.Fatalf("lane b after a closed: %#v, %v", m, err)
	}
	if err := b.Write(&wire.KeepAlive{Source: "b", Session: "s", Leaving: true}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	select {
	case <-s.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection stayed open after its last lane closed")
	}
	frames := s.read()
	if k, ok := frames[len(frames)-1].(*wire.KeepAlive); !ok || !k.Leaving {
		t.Fatalf("last frame the store read: %#v, want the goodbye written before the last close", frames[len(frames)-1])
	}
	if n := p.open(); n != 0 {
		t.Fatalf("pool holds %d connections after the last lane closed", n)
	}
	dial(t, p, s.addr()).Close()
	if d := s.dials.Load(); d != 2 {
		t.Fatalf("%d dials, want 2 (a new connection after the last closed)", d)
	}
}

// A connection that fails, or that a lane abandons, fails every lane; the
// next dial opens a new one.
func TestFailureEndsEveryLane(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(s *store, a *Lane)
	}{
		{"the store closes it", func(s *store, _ *Lane) { s.dropAll() }},
		{"a lane abandons it", func(_ *store, a *Lane) { a.Abandon() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			p := NewPool()
			a, b := dial(t, p, s.addr()), dial(t, p, s.addr())
			tt.end(s, a)
			for name, l := range map[string]*Lane{"a": a, "b": b} {
				if _, err := readWithin(t, l, 5*time.Second); err == nil || isTimeout(err) {
					t.Fatalf("lane %s read after the connection ended: %v, want its end", name, err)
				}
				if err := l.Send(&wire.Ping{ReqID: 1}); err == nil {
					t.Fatalf("lane %s sent on an ended connection", name)
				}
			}
			c := dial(t, p, s.addr())
			defer c.Close()
			if err := c.Send(&wire.Ping{ReqID: 2}); err != nil {
				t.Fatal(err)
			}
			if _, err := readWithin(t, c, 5*time.Second); err != nil {
				t.Fatalf("a lane of the new connection: %v", err)
			}
		})
	}
}

// A read deadline ends a Read with a time-out error (as a net.Conn's), and
// leaves the lane usable.
func TestReadDeadline(t *testing.T) {
	s := newStore(t)
	l := dial(t, NewPool(), s.addr())
	defer l.Close()
	start := time.Now()
	_, err := readWithin(t, l, 50*time.Millisecond)
	if !isTimeout(err) {
		t.Fatalf("read past its deadline: %v, want a time-out", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("read took %v past a 50ms deadline", took)
	}
	if err := l.Send(&wire.Ping{ReqID: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := readWithin(t, l, 5*time.Second); err != nil {
		t.Fatalf("read after a time-out: %v", err)
	}
}

// A dial given up before the connection is up leaves no connection open.
func TestGivingUpLeavesNoConnection(t *testing.T) {
	s := newStore(t)
	p := NewPool()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := p.Dial(ctx, dialer(), s.addr()); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial with a cancelled context: %v", err)
	}
	// A waiter that leaves while the dial is under way.
	s.slow.Store(int64(300 * time.Millisecond))
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if l, _, err := p.Dial(ctx, dialer(), s.addr()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial given up after 20ms of a 300ms handshake: %v, %v", l, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.open() != 0 || len(s.closed) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a connection nobody uses stays open (pool holds %d, store saw %d dials)", p.open(), s.dials.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
