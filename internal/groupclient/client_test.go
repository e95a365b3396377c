package groupclient

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"umstore/wire"
)

// fakeStore is a store that answers each request with what its script says:
// enough of the protocol to drive the leader-following rules.
type fakeStore struct {
	ln     net.Listener
	token  string
	script func(n int, req wire.Message) wire.Message // n counts requests to this store from 1; nil answer: stay silent
	group  int                                        // the group its Welcome names (0: none, as before groups were named)

	mu       sync.Mutex
	dials    int
	requests int
}

func newFakeStore(t *testing.T, script func(n int, req wire.Message) wire.Message) *fakeStore {
	t.Helper()
	return newFakeStoreWithToken(t, "", script)
}

// newFakeStoreWithToken starts a fake store that requires token ("": none).
func newFakeStoreWithToken(t *testing.T, token string, script func(n int, req wire.Message) wire.Message) *fakeStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeStore{ln: ln, token: token, script: script}
	var wg sync.WaitGroup
	var conns []net.Conn
	var connMu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		connMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connMu.Unlock()
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
			connMu.Lock()
			conns = append(conns, nc)
			connMu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(nc) }()
		}
	}()
	return s
}

func (s *fakeStore) addr() string { return s.ln.Addr().String() }

func (s *fakeStore) serve(nc net.Conn) {
	defer nc.Close()
	s.mu.Lock()
	s.dials++
	s.mu.Unlock()
	c := wire.NewConn(nc, 0)
	s.mu.Lock()
	group := s.group
	s.mu.Unlock()
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: s.addr(), Group: group}, s.token); err != nil {
		return
	}
	for {
		req, err := c.Read()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.requests++
		n := s.requests
		s.mu.Unlock()
		answer := s.script(n, req)
		if answer == nil {
			continue // silent: the client's deadline or context decides
		}
		if err := c.Send(answer); err != nil {
			return
		}
	}
}

func (s *fakeStore) counts() (dials, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials, s.requests
}

func answer(m wire.Message) func(int, wire.Message) wire.Message {
	return func(int, wire.Message) wire.Message { return m }
}

func redirectTo(s **fakeStore) func(int, wire.Message) wire.Message {
	return func(int, wire.Message) wire.Message { return &wire.NotLeader{Leader: (*s).addr()} }
}

func dialer() *wire.Dialer { return &wire.Dialer{Client: "test", Timeout: time.Second} }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A follower's redirect is followed at once, the leader is remembered, and
// the next Call reuses the connection to it.
func TestCallFollowsRedirectAndKeepsTheConnection(t *testing.T) {
	var leader *fakeStore
	follower := newFakeStore(t, redirectTo(&leader))
	leader = newFakeStore(t, answer(&wire.SourceList{}))
	c := New(1, []string{follower.addr(), leader.addr()}, dialer())
	defer c.Close()
	for i := 0; i < 2; i++ {
		if _, err := c.Sources(testCtx(t)); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if c.Leader() != leader.addr() {
		t.Fatalf("Leader() = %q, want the store that answered (%s)", c.Leader(), leader.addr())
	}
	if d, r := follower.counts(); d != 1 || r != 1 {
		t.Fatalf("follower: %d dials, %d requests; want 1 and 1 (the second call starts at the leader)", d, r)
	}
	if d, r := leader.counts(); d != 1 || r != 2 {
		t.Fatalf("leader: %d dials, %d requests; want 1 dial for 2 requests", d, r)
	}
}

// A store that names no leader means an election: Call goes round the
// stores again until one leads; Open asks each store once and leaves the
// retrying to its caller.
func TestElectionCallWaitsOpenGivesUp(t *testing.T) {
	electing := func(after int, m wire.Message) func(int, wire.Message) wire.Message {
		return func(n int, _ wire.Message) wire.Message {
			if n <= after {
				return &wire.NotLeader{}
			}
			return m
		}
	}
	a := newFakeStore(t, electing(1<<30, nil))
	b := newFakeStore(t, electing(1, &wire.SourceList{}))
	c := New(1, []string{a.addr(), b.addr()}, dialer())
	defer c.Close()
	if _, err := c.Call(testCtx(t), &wire.Sources{}); err != nil {
		t.Fatalf("Call through an election: %v", err)
	}

	a = newFakeStore(t, electing(1<<30, nil))
	b = newFakeStore(t, electing(1, &wire.Registered{}))
	c = New(1, []string{a.addr(), b.addr()}, dialer())
	_, _, err := c.Open(testCtx(t), &wire.Register{ReqID: 1, Source: "s"}, OpenOptions{Reply: wire.TypeRegistered})
	if err == nil {
		t.Fatal("Open during an election succeeded; want it to give up after one round")
	}
	for _, s := range []*fakeStore{a, b} {
		if _, r := s.counts(); r != 1 {
			t.Fatalf("Open asked a store %d times, want once", r)
		}
	}
}

// An Error answer ends a Call at once; Open moves on to the next store when
// told to, and stops where it is told to stop.
func TestErrorAnswers(t *testing.T) {
	unavailable := &wire.Error{Code: wire.CodeUnavailable, Message: "lost leadership"}
	busy := &wire.Error{Code: wire.CodeBusy, Message: "held by another publisher"}
	nextUnlessBusy := func(e *wire.Error) bool { return e.Code != wire.CodeBusy }
	tests := []struct {
		name      string
		first     wire.Message // the first store's answer
		open      bool
		wantErr   string // an error code the error carries; "" for success
		wantAsked int    // requests the second store saw
	}{
		{"call returns the error", unavailable, false, wire.CodeUnavailable, 0},
		{"open moves on", unavailable, true, "", 1},
		{"open stops at busy", busy, true, wire.CodeBusy, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeStore(t, answer(tt.first))
			b := newFakeStore(t, answer(&wire.Registered{HighSeq: 7}))
			c := New(1, []string{a.addr(), b.addr()}, dialer())
			defer c.Close()
			var err error
			var m wire.Message
			if tt.open {
				var conn wire.FrameConn
				conn, m, err = c.Open(testCtx(t), &wire.Register{ReqID: 1, Source: "s"}, OpenOptions{Reply: wire.TypeRegistered, NextOnError: nextUnlessBusy})
				if conn != nil {
					conn.Close()
				}
			} else {
				m, err = c.Call(testCtx(t), &wire.Register{Source: "s"})
			}
			var we *wire.Error
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tt.wantErr == "" && m.(*wire.Registered).HighSeq != 7:
				t.Fatalf("answer %#v, want the second store's", m)
			case tt.wantErr != "" && (!errors.As(err, &we) || we.Code != tt.wantErr):
				t.Fatalf("err = %v, want a wire error with code %s", err, tt.wantErr)
			}
			if _, r := b.counts(); r != tt.wantAsked {
				t.Fatalf("second store asked %d times, want %d", r, tt.wantAsked)
			}
		})
	}
}

// A refused token is final: no other store is tried.
func TestRefusedTokenStopsAtOnce(t *testing.T) {
	a := newFakeStoreWithToken(t, "secret", answer(&wire.SourceList{}))
	b := newFakeStoreWithToken(t, "secret", answer(&wire.SourceList{}))
	c := New(1, []string{a.addr(), b.addr()}, dialer())
	defer c.Close()
	_, err := c.Call(testCtx(t), &wire.Sources{})
	if !errors.Is(err, wire.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if d, _ := b.counts(); d != 0 {
		t.Fatalf("the second store was dialed %d times after the first refused the token", d)
	}
}

// Open counts an answer of the wrong type as a failed store, and the
// connection it returns is the one to the store that accepted.
func TestOpenSkipsAWrongAnswer(t *testing.T) {
	a := newFakeStore(t, answer(&wire.SourceList{}))
	b := newFakeStore(t, func(n int, req wire.Message) wire.Message {
		if n == 1 {
			return &wire.Registered{HighSeq: 3}
		}
		return &wire.Ack{FirstSeq: 4, LastSeq: 4}
	})
	c := New(1, []string{a.addr(), b.addr()}, dialer())
	conn, m, err := c.Open(testCtx(t), &wire.Register{ReqID: 1, Source: "s"}, OpenOptions{Reply: wire.TypeRegistered})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if m.(*wire.Registered).HighSeq != 3 || c.Leader() != b.addr() {
		t.Fatalf("answer %#v from %s", m, c.Leader())
	}
	// The session is usable: no deadline left on it.
	if err := conn.Send(&wire.Publish{ReqID: 2, Source: "s", FirstSeq: 4, Payloads: [][]byte{[]byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if ack, err := conn.Read(); err != nil || ack.(*wire.Ack).LastSeq != 4 {
		t.Fatalf("session: %v, %v", ack, err)
	}
}

// Redirected moves where the next session starts; a redirect naming no
// leader forgets the old one.
func TestRedirected(t *testing.T) {
	a := newFakeStore(t, answer(&wire.Registered{}))
	b := newFakeStore(t, answer(&wire.Registered{}))
	c := New(1, []string{a.addr(), b.addr()}, dialer())
	c.Redirected(&wire.NotLeader{Leader: b.addr()})
	conn, _, err := c.Open(testCtx(t), &wire.Register{ReqID: 1}, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if d, _ := a.counts(); d != 0 || c.Leader() != b.addr() {
		t.Fatalf("session opened at %s after a redirect to %s (first store dialed %d times)", c.Leader(), b.addr(), d)
	}
	c.Redirected(&wire.NotLeader{})
	if c.Leader() != "" {
		t.Fatalf("Leader() = %q after a redirect naming nobody", c.Leader())
	}
}

// A broken connection is re-opened to the same leader on the next Call.
func TestCallRedialsABrokenConnection(t *testing.T) {
	s := newFakeStore(t, answer(&wire.SourceList{}))
	c := New(1, []string{s.addr()}, dialer())
	defer c.Close()
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	c.kept.conn.(*wire.Conn).NetConn().Close() // as if the store had gone away and come back
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatalf("call after the connection broke: %v", err)
	}
	if d, _ := s.counts(); d != 2 {
		t.Fatalf("%d dials, want 2", d)
	}
}

// Cancelling the context ends a Call waiting on a silent store at once,
// not after CallTimeout.
func TestCancelEndsAWaitOnASilentStore(t *testing.T) {
	s := newFakeStore(t, answer(nil))
	c := New(1, []string{s.addr()}, dialer())
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, r := s.counts(); r > 0 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := c.Call(ctx, &wire.Sources{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Call returned %v after its context was cancelled", took)
	}
}
