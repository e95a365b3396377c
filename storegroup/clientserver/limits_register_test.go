package clientserver

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/storegroup/proposal"
	"umstore/wire"
)

// limitServer starts a client server with limits l on a real TCP port, over
// a real repository, leading but without raft. A registration it admits
// goes on to propose, which a proposer without raft answers NotLeader; a
// registration over a limit is refused before, with an Error. ClaimSource
// refuses the source "held" (another session holds it); every receiver
// name is free.
func limitServer(t *testing.T, l Limits) *Server {
	t.Helper()
	return testServer(t, l, nil, nil)
}

// testServer is limitServer over TLS when serverTLS is set, with its Deps
// edited by edit (when not nil) before the server starts.
func testServer(t *testing.T, l Limits, serverTLS *tls.Config, edit func(*Deps)) *Server {
	t.Helper()
	repo, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	applied := make(chan struct{}) // nothing is ever applied
	d := Deps{
		Name:            "A1",
		Group:           1,
		MaxFrame:        1 << 20,
		ActivityTimeout: time.Second,
		Limits:          l,
		Log:             slog.New(slog.DiscardHandler),
		Metrics:         NewMetrics(nil),
		Repo:            repo,
		Proposer:        proposal.New(func() *raft.Raft { return nil }, time.Second, nil),
		ClaimSource: func(source, session string, now time.Time, timeout time.Duration) error {
			if source == "held" {
				return errors.New(`source "held" is held by another live session`)
			}
			return nil
		},
		TouchSource:     func(source, session string, now time.Time) {},
		Receivers:       freeReceivers{},
		ReceiverTimeout: time.Second,
		IsLeader:        func() bool { return true },
		Leader:          func() (Member, bool) { return Member{}, false },
		Status:          func() Status { return Status{Name: "A1", Group: 1} },
		NextApplied:     func() <-chan struct{} { return applied },
		Expire:          func(source, session, why string) {},
	}
	if edit != nil {
		edit(&d)
	}
	cs, err := New("127.0.0.1:0", serverTLS, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cs.Serve(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		cs.HangUp()
		wg.Wait()
		cs.WaitConns(5 * time.Second)
	})
	return cs
}

// freeReceivers holds every receiver name for whoever asks.
type freeReceivers struct{}

func (freeReceivers) Claim(source, receiver, session string, now time.Time, timeout time.Duration) error {
	return nil
}
func (freeReceivers) Touch(source, receiver, session string, now time.Time) Holder { return HeldByIt }
func (freeReceivers) Leave(source, receiver, session string)                       {}
func (freeReceivers) LastHeard(source, receiver string) (time.Time, bool)          { return time.Time{}, false }

// dialLimits opens a handshaken connection to cs.
func dialLimits(t *testing.T, cs *Server) *wire.Conn {
	t.Helper()
	c, _, err := (&wire.Dialer{Client: "test"}).Dial(context.Background(), cs.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer sends m on c and returns what the server answered, as "" for an
// admitted request (any answer but an Error) or "code: message".
func answer(t *testing.T, c *wire.Conn, m wire.Message) string {
	t.Helper()
	_ = c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*wire.KeepAlive); ok {
		return "" // answered by nothing; the next request is served after it
	}
	got, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := got.(*wire.Error); ok {
		return e.Code + ": " + e.Message
	}
	return ""
}

// Sources and receiver names are counted per connection and, for sources,
// across the store: up to a limit is admitted, one more is refused with an
// Error naming the limit, its value and what to do; registering again what
// the connection holds is not counted again; a goodbye or the connection's
// end gives a place back; a registration refused for another reason is not
// counted.
func TestRegistrationLimits(t *testing.T) {
	reg := func(source, session string) wire.Message {
		return &wire.Register{ReqID: 1, Source: source, Session: session}
	}
	regRcv := func(receiver, session string) wire.Message {
		return &wire.RegisterReceiver{ReqID: 1, Source: "s", Receiver: receiver, Session: session}
	}
	const (
		perConn   = "unavailable: this connection already holds 2 sources (limit MaxSourcesPerConn of store A1's client limits, umstored --max-sources-per-conn): close sources you no longer use"
		perStore  = "unavailable: store A1 already holds 3 source registrations from its clients (limit MaxSources of its client limits, umstored --max-sources)"
		receivers = "unavailable: this connection already holds 2 receiver names (limit MaxReceiversPerConn of store A1's client limits, umstored --max-receivers-per-conn): close receivers you no longer use"
		storeRcvs = "unavailable: store A1 already holds 3 receiver names registered by its clients (limit MaxReceivers of its client limits, umstored --max-receivers)"
	)
	type step struct {
		conn  int          // which connection; opened at its first step
		send  wire.Message // nil: close the connection
		want  string       // "" admitted, else a prefix of "code: message"
		retry bool         // the server sees a close in its own time: retry until want
	}
	tests := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"per connection", Limits{MaxSourcesPerConn: 2, MaxSources: 10}, []step{
			{conn: 1, send: reg("a", "s1")}, {conn: 1, send: reg("b", "s1")},
			{conn: 1, send: reg("a", "s1")}, {conn: 1, send: reg("a", "s2")}, // again, and for another session: counted once
			{conn: 1, send: reg("c", "s1"), want: perConn},
			{conn: 2, send: reg("c", "s1")}, // another connection has its own count
		}},
		{"per store, freed when a connection closes", Limits{MaxSourcesPerConn: 5, MaxSources: 3}, []step{
			{conn: 1, send: reg("a", "s1")}, {conn: 1, send: reg("b", "s1")},
			{conn: 2, send: reg("c", "s2")},
			{conn: 2, send: reg("d", "s2"), want: perStore},
			{conn: 1, send: reg("a", "s1")}, // held already: admitted at the limit
			{conn: 1},
			{conn: 2, send: reg("d", "s2"), retry: true},
			{conn: 3, send: reg("e", "s3")},
			{conn: 3, send: reg("f", "s3"), want: perStore},
		}},
		{"a goodbye frees the place", Limits{MaxSourcesPerConn: 2}, []step{
			{conn: 1, send: reg("a", "s1")}, {conn: 1, send: reg("b", "s1")},
			{conn: 1, send: reg("c", "s1"), want: perConn},
			{conn: 1, send: &wire.KeepAlive{Source: "a", Session: "other"}}, // not a's session: ignored
			{conn: 1, send: &wire.KeepAlive{Source: "a", Session: "s1", Leaving: true}},
			{conn: 1, send: reg("c", "s1")},
			{conn: 1, send: &wire.Publish{ReqID: 2, Source: "a", FirstSeq: 1, Payloads: [][]byte{{1}}}, want: "not-registered"},
		}},
		{"a refused claim is not counted", Limits{MaxSources: 1}, []step{
			{conn: 1, send: reg("held", "s1"), want: "source-busy"},
			{conn: 1, send: reg("a", "s1")},
			{conn: 2, send: reg("b", "s2"), want: "unavailable: store A1 already holds 1 source registrations"},
		}},
		{"receiver names per connection", Limits{MaxReceiversPerConn: 2}, []step{
			{conn: 1, send: regRcv("r1", "x")}, {conn: 1, send: regRcv("r2", "x")},
			{conn: 1, send: regRcv("r1", "y")}, // again: counted once
			{conn: 1, send: regRcv("r3", "x"), want: receivers},
			{conn: 2, send: regRcv("r3", "x")},
			{conn: 1, send: &wire.ConsumedAs{ReqID: 3, Source: "s", Receiver: "r1", Session: "x", Leaving: true}}, // not the session that registered it last
			{conn: 1, send: regRcv("r3", "x"), want: receivers},
			{conn: 1, send: &wire.ConsumedAs{ReqID: 4, Source: "s", Receiver: "r1", Session: "y", Leaving: true}},
			{conn: 1, send: regRcv("r3", "x")},
		}},
		{"receiver names per store, freed by a goodbye or a close", Limits{MaxReceiversPerConn: 2, MaxReceivers: 3}, []step{
			{conn: 1, send: regRcv("r1", "x")}, {conn: 1, send: regRcv("r2", "x")},
			{conn: 2, send: regRcv("r3", "y")},
			{conn: 2, send: regRcv("r4", "y"), want: storeRcvs},
			{conn: 3, send: regRcv("r4", "z"), want: storeRcvs}, // a new connection too
			{conn: 1, send: regRcv("r1", "x")},                  // held already: admitted at the limit
			{conn: 1, send: &wire.ConsumedAs{ReqID: 3, Source: "s", Receiver: "r1", Session: "x", Leaving: true}},
			{conn: 2, send: regRcv("r4", "y")},
			{conn: 3, send: regRcv("r5", "z"), want: storeRcvs},
			{conn: 1},
			{conn: 3, send: regRcv("r5", "z"), retry: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := limitServer(t, tt.limits)
			conns := map[int]*wire.Conn{}
			for i, s := range tt.steps {
				c := conns[s.conn]
				if c == nil {
					c = dialLimits(t, cs)
					conns[s.conn] = c
				}
				if s.send == nil {
					c.Close()
					delete(conns, s.conn)
					continue
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					got := answer(t, c, s.send)
					ok := got == "" && s.want == "" || s.want != "" && strings.HasPrefix(got, s.want)
					if ok {
						break
					}
					if !s.retry || time.Now().After(deadline) {
						t.Fatalf("step %d (connection %d, %T): answered %q, want %q", i+1, s.conn, s.send, got, cmp.Or(s.want, "admitted"))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}

// Subscriptions running on one connection are bounded too: one more is
// refused with an Error naming MaxReceiversPerConn, at once, while the
// others keep running; another connection may subscribe.
func TestSubscriptionLimit(t *testing.T) {
	cs := limitServer(t, Limits{MaxReceiversPerConn: 2})
	c := dialLimits(t, cs)
	for id := uint64(1); id <= 3; id++ {
		if err := c.Send(&wire.Subscribe{ReqID: id, Source: "s", From: 1}); err != nil {
			t.Fatal(err)
		}
	}
	const want = "this connection already runs 2 subscriptions (limit MaxReceiversPerConn of store A1's client limits, umstored --max-receivers-per-conn)"
	running := map[uint64]bool{}
	refused := false
	_ = c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	for !refused || len(running) < 2 {
		m, err := c.Read()
		if err != nil {
			t.Fatalf("refused %v, running %v: %v", refused, running, err)
		}
		switch m := m.(type) {
		case *wire.Deliver:
			if m.ReqID == 3 {
				t.Fatal("the third subscription runs")
			}
			running[m.ReqID] = true
		case *wire.Error:
			if m.ReqID != 3 || m.Code != wire.CodeUnavailable || !strings.HasPrefix(m.Message, want) {
				t.Fatalf("got %+v, want an %s Error for request 3 starting %q", m, wire.CodeUnavailable, want)
			}
			refused = true
		default:
			t.Fatalf("got %#v", m)
		}
	}
	other := dialLimits(t, cs)
	if err := other.Send(&wire.Subscribe{ReqID: 1, Source: "s", From: 1}); err != nil {
		t.Fatal(err)
	}
	_ = other.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	if m, err := other.Read(); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*wire.Deliver); !ok {
		t.Fatalf("another connection's subscription: got %#v, want a Deliver", m)
	}
}
