package storegroup_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"umstore/internal/testmain"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/publisher"
	"umstore/repository"
	"umstore/storegroup"
	"umstore/wire"
)

func newPub(ctx context.Context, c *clustertest.Cluster, source string) (*publisher.Publisher, error) {
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.RegisterTimeout = source, c.Addrs(), 300*time.Millisecond
	return publisher.New(ctx, cfg)
}

// A second live publisher on a source is refused; the first one's goodbye
// frees the source at once.
func TestSecondLivePublisherIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p1, err := newPub(ctx, c, "owned")
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	_, err = newPub(short, c, "owned")
	cancelShort()
	if !errors.Is(err, publisher.ErrSourceBusy) {
		t.Fatalf("second publisher while the first is alive: %v, want ErrSourceBusy", err)
	}
	p1.Close()
	p2, err := newPub(ctx, c, "owned")
	if err != nil {
		t.Fatalf("after the first publisher closed: %v", err)
	}
	p2.Close()
}

// A publisher that dies without a goodbye holds its source until the
// source-activity-timeout passes, then the leader expires its session
// through the log and a new publisher takes over: not before, and not much
// after.
func TestSilentPublisherExpires(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	const timeout = 2 * time.Second
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = timeout })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A publisher registers in both groups, publishes one message and then
	// vanishes (no goodbye, no keep-alive): what a kill -9 leaves behind.
	// (A source that never held a message is forgotten once freed:
	// TestEmptySourceIsForgotten.)
	d := &wire.Dialer{Client: "doomed publisher"}
	for g, addrs := range c.Addrs() {
		gc := groupclient.New(g+1, addrs, d)
		if _, err := gc.Call(ctx, &wire.Register{Source: "orphan", Session: "doomed"}); err != nil {
			t.Fatal(err)
		}
		if _, err := gc.Call(ctx, &wire.Publish{Source: "orphan", FirstSeq: 1, Payloads: [][]byte{[]byte("last words")}}); err != nil {
			t.Fatal(err)
		}
		gc.Close()
	}
	died := time.Now()
	early, cancelEarly := context.WithTimeout(ctx, timeout/2)
	_, err := newPub(early, c, "orphan")
	cancelEarly()
	if !errors.Is(err, publisher.ErrSourceBusy) {
		t.Fatalf("a new publisher before the timeout: %v, want ErrSourceBusy", err)
	}
	p, err := newPub(ctx, c, "orphan")
	took := time.Since(died)
	if err != nil {
		t.Fatalf("a new publisher after the timeout: %v", err)
	}
	if took < timeout || took > timeout+5*time.Second {
		t.Fatalf("the source was taken over %v after the publisher died; the timeout is %v", took, timeout)
	}
	// The expiry went through the log: every store of group 1 records it
	// (followers apply a moment later). Checked before the new publisher
	// closes: its goodbye expires its own session, the last one recorded.
	c.Eventually(10*time.Second, "every store of group 1 records the expired session", func() bool {
		for _, m := range c.Members(1) {
			info, _, _ := c.Store(m.Name).Repository().Source("orphan")
			if info.ExpiredSession != "doomed" {
				return false
			}
		}
		return true
	})
	p.Close()
}

// A client that registers names, publishes nothing and leaves does not
// make the stores keep them: once freed (silent, or said goodbye), a
// source that never held a message is forgotten by every store of every
// group, and its name registers afresh. A source with a message is kept.
func TestEmptySourceIsForgotten(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = timeout })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &wire.Dialer{Client: "careless client"}
	for g, addrs := range c.Addrs() {
		gc := groupclient.New(g+1, addrs, d)
		for _, src := range []string{"ghost-1", "ghost-2", "kept"} {
			if _, err := gc.Call(ctx, &wire.Register{Source: src, Session: "gone"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := gc.Call(ctx, &wire.Publish{Source: "kept", FirstSeq: 1, Payloads: [][]byte{[]byte("held")}}); err != nil {
			t.Fatal(err)
		}
		gc.Close()
	}
	// A publisher that says goodbye without publishing: freed at once.
	p, err := newPub(ctx, c, "ghost-3")
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	c.Eventually(15*time.Second, "every store of both groups forgot the sources that never held a message", func() bool {
		for g := 1; g <= 2; g++ {
			for _, m := range c.Members(g) {
				repo := c.Store(m.Name).Repository()
				for _, src := range []string{"ghost-1", "ghost-2", "ghost-3"} {
					if _, held, _ := repo.Source(src); held {
						return false
					}
				}
			}
		}
		return true
	})
	for g := 1; g <= 2; g++ {
		for _, m := range c.Members(g) {
			if in, held, _ := c.Store(m.Name).Repository().Source("kept"); !held || in.HighSeq != 1 {
				t.Fatalf("store %s: the source with a message: %+v held %v", m.Name, in, held)
			}
		}
	}
	p, err = newPub(ctx, c, "ghost-1")
	if err != nil {
		t.Fatalf("a forgotten name registered again: %v", err)
	}
	p.Close()
}

// The late messages of a replaced publisher (queued on its old connection)
// are refused, never stored under sequence numbers the new publisher uses.
func TestReplacedPublishersLateMessagesAreRefused(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &wire.Dialer{Client: "old publisher"}
	old := groupclient.New(1, c.Addrs()[0], d)
	defer old.Close()
	if _, err := old.Call(ctx, &wire.Register{Source: "taken", Session: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Call(ctx, &wire.Publish{Source: "taken", FirstSeq: 1, Payloads: [][]byte{[]byte("old 1")}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the old publisher falls silent
	p, err := newPub(ctx, c, "taken")
	if err != nil {
		t.Fatalf("a new publisher after the old one's silence: %v", err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, []byte("new 2")); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The old publisher's next message arrives late, on its old connection.
	_, err = old.Call(ctx, &wire.Publish{Source: "taken", FirstSeq: 3, Payloads: [][]byte{[]byte("old 3")}})
	if err == nil || !strings.Contains(err.Error(), "no longer holds the source") {
		t.Fatalf("the replaced publisher's late message: %v, want a refusal", err)
	}
	// Reads see the publishes once the repository commits them, a few
	// milliseconds after the answer (Config.RepositoryCommitInterval).
	var msgs []repository.Message
	c.Eventually(5*time.Second, "the new publisher's message is read back", func() bool {
		msgs, _ = c.WaitLeader(1, 10*time.Second).Repository().Read("taken", 1, 10, 0, 0)
		return len(msgs) >= 2
	})
	if len(msgs) != 2 || string(msgs[1].Payload) != "new 2" {
		t.Fatalf("held %d messages (%v); want old 1, new 2 and nothing from the replaced publisher after", len(msgs), msgs)
	}
}
