package storegroup_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/repository"
	"umstore/storegroup"
	"umstore/wire"
)

// ownerPublisher starts a publisher on source with session "owner" and
// publishes 1..n through it.
func ownerPublisher(ctx context.Context, t *testing.T, c *clustertest.Cluster, source string, n int) *publisher.Publisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Session, cfg.RegisterTimeout = source, c.Addrs(), "owner", 300*time.Millisecond
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for i := 1; i <= n; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("owner %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// heldPayloads waits until every member of group 1 holds source through
// high, and returns what each holds of it, by store name.
func heldPayloads(t *testing.T, c *clustertest.Cluster, source string, high uint64) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range c.Members(1) {
		c.WaitHeld(m.Name, source, high, 30*time.Second)
		msgs, err := c.Store(m.Name).Repository().Read(source, 1, ^uint64(0), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range msgs {
			out[m.Name] = append(out[m.Name], fmt.Sprintf("%d %s", msg.Seq, msg.Payload))
		}
	}
	return out
}

// A client that never registered a source cannot write it: whatever
// sequence numbers it names, the leader answers an Error and proposes
// nothing, and the owner's later messages are stored as its own (no
// conflicts). Its keep-alives do not speak for the owner either. On the
// code before this rule, the stranger's Publish was stored and the owner's
// next message counted as a conflict.
func TestPublishWithoutRegistrationIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := ownerPublisher(ctx, t, c, "owned", 5)
	leader := c.WaitLeader(1, 30*time.Second)
	before := leader.Status().LastIndex

	stranger := dial(t, clientAddr(c, leader.Name()))
	// It registers another source: that registration is no licence for this one.
	if r, ok := stranger.call(&wire.Register{ReqID: 1, Source: "mine", Session: "stranger"}).(*wire.Registered); !ok {
		t.Fatalf("register another source: %#v", r)
	}
	tests := []struct {
		name  string
		first uint64
		n     int
	}{
		{"the owner's next sequence number", 6, 1},
		{"a run past the owner's high", 6, 3},
		{"far ahead", 1_000_000, 1},
		{"over a held message", 3, 1},
		{"at the ceiling", wire.MaxSeq, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payloads := make([][]byte, tt.n)
			for j := range payloads {
				payloads[j] = []byte("stranger")
			}
			reqID := uint64(10 + i)
			got := stranger.call(&wire.Publish{ReqID: reqID, Source: "owned", FirstSeq: tt.first, Payloads: payloads})
			e, ok := got.(*wire.Error)
			if !ok || e.Code != wire.CodeNotRegistered || e.ReqID != reqID || !strings.Contains(e.Message, `register source "owned" on this connection first`) {
				t.Fatalf("got %#v, want an Error %s for request %d saying to register first", got, wire.CodeNotRegistered, reqID)
			}
		})
	}
	// Knowing the owner's session is not enough to speak for it on another
	// connection: its goodbye is ignored, and a registration is refused.
	if err := stranger.c.Send(&wire.KeepAlive{Source: "owned", Session: p.Session(), Leaving: true}); err != nil {
		t.Fatal(err)
	}
	got := stranger.call(&wire.Register{ReqID: 20, Source: "owned", Session: "stranger"})
	if e, ok := got.(*wire.Error); !ok || e.Code != wire.CodeBusy || strings.Contains(e.Message, "owner") {
		t.Fatalf("a stranger registering the owner's source: got %#v, want %s without the owner's session", got, wire.CodeBusy)
	}
	// Only the "mine" registration went into the log (and the raft no-ops
	// and housekeeping a leader may add): no Publish from the stranger.
	if info, _, _ := leader.Repository().Source("owned"); info.HighSeq != 5 || info.Session != p.Session() {
		t.Fatalf("after the stranger: owned is at %d held by %q, want 5 held by the owner's session %q", info.HighSeq, info.Session, p.Session())
	}

	// The owner goes on: its messages are stored as its own.
	for i := 6; i <= 8; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("owner %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Stats().Conflicts; n != 0 {
		t.Fatalf("the owner's messages met %d conflicts", n)
	}
	var want []string
	for i := 1; i <= 8; i++ {
		want = append(want, fmt.Sprintf("%d owner %d", i, i))
	}
	for name, held := range heldPayloads(t, c, "owned", 8) {
		if !reflect.DeepEqual(held, want) {
			t.Fatalf("%s holds %q, want %q", name, held, want)
		}
	}
	t.Logf("log grew by %d entries while the stranger tried", leader.Status().LastIndex-before)
}

// No Publish may reach above the sequence-number ceiling, even from the
// connection that registered the source: the leader answers an Error and
// stores nothing, so such a message can no longer use up the source (on the
// code before the ceiling, FirstSeq 2^64-1 was stored and the next
// publisher resumed at 0). The next publisher resumes where the source
// stood.
func TestPublishAboveTheCeilingIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := c.WaitLeader(1, 30*time.Second)
	cl := dial(t, clientAddr(c, leader.Name()))
	if r, ok := cl.call(&wire.Register{ReqID: 1, Source: "s", Session: "raw"}).(*wire.Registered); !ok {
		t.Fatalf("register: %#v", r)
	}
	if a, ok := cl.call(&wire.Publish{ReqID: 2, Source: "s", FirstSeq: 1, Payloads: [][]byte{[]byte("1"), []byte("2"), []byte("3")}}).(*wire.Ack); !ok || a.HighSeq != 3 {
		t.Fatalf("publish 1..3: %#v", a)
	}
	tests := []struct {
		name  string
		first uint64
		n     int
	}{
		{"2^64-1", ^uint64(0), 1},
		{"a run wrapping past 2^64", ^uint64(0) - 1, 4},
		{"just above the ceiling", wire.MaxSeq + 1, 1},
		{"a run ending just above the ceiling", wire.MaxSeq - 1, 3},
		{"2^63", 1 << 63, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqID := uint64(10 + i)
			got := cl.call(&wire.Publish{ReqID: reqID, Source: "s", FirstSeq: tt.first, Payloads: make([][]byte, tt.n)})
			e, ok := got.(*wire.Error)
			if !ok || e.Code != wire.CodeBadRequest || e.ReqID != reqID || !strings.Contains(e.Message, fmt.Sprint(uint64(wire.MaxSeq))) {
				t.Fatalf("got %#v, want an Error %s naming the ceiling %d", got, wire.CodeBadRequest, uint64(wire.MaxSeq))
			}
		})
	}
	if a, ok := cl.call(&wire.Publish{ReqID: 30, Source: "s", FirstSeq: 4, Payloads: [][]byte{[]byte("4")}}).(*wire.Ack); !ok || a.HighSeq != 4 {
		t.Fatalf("publish 4 after the refusals: %#v, want an Ack with HighSeq 4", a)
	}
	if err := cl.c.Send(&wire.KeepAlive{Source: "s", Session: "raw", Leaving: true}); err != nil {
		t.Fatal(err)
	}

	// The next publisher takes over and resumes at 5.
	var p *publisher.Publisher
	c.Eventually(20*time.Second, "a new publisher registers the source", func() bool {
		short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
		defer cancelShort()
		var err error
		p, err = newPub(short, c, "s")
		return err == nil
	})
	defer p.Close()
	if got := p.FirstSeq(); got != 5 {
		t.Fatalf("the next publisher resumed at %d, want 5", got)
	}
	if seq, err := p.Send(ctx, []byte("5")); err != nil || seq != 5 {
		t.Fatalf("send: %d, %v", seq, err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for name, held := range heldPayloads(t, c, "s", 5) {
		if want := []string{"1 1", "2 2", "3 3", "4 4", "5 5"}; !reflect.DeepEqual(held, want) {
			t.Fatalf("%s holds %q, want %q", name, held, want)
		}
	}
}

// The wire's ceiling and the repository's are one number: a store that
// accepted what its repository refuses would acknowledge nothing it stored.
func TestCeilingsAgree(t *testing.T) {
	t.Parallel()
	if wire.MaxSeq != repository.MaxSeq {
		t.Fatalf("wire.MaxSeq = %d, repository.MaxSeq = %d", uint64(wire.MaxSeq), uint64(repository.MaxSeq))
	}
}
