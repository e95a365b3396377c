package storegroup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"umstore/internal/testmain"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
	"umstore/wire"
)

// partitionPublisher publishes source through every group of c.
func partitionPublisher(t *testing.T, c *clustertest.Cluster, source string) *publisher.Publisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source = source
	cfg.Groups = c.Addrs()
	cfg.AckTimeout = 2 * time.Second // give up quickly on a leader cut off from its group
	cfg.ReconnectDelay = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("new publisher: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// partitionSend sends messages from..to and waits until they are stable.
func partitionSend(t *testing.T, p *publisher.Publisher, from, to uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := from; i <= to; i++ {
		if seq, err := p.Send(ctx, []byte(fmt.Sprintf("message %d", i))); err != nil || seq != i {
			t.Fatalf("send %d: sequence %d, %v", i, seq, err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush through %d: %v (stats %+v)", to, err, p.Stats())
	}
}

// A leader cut off from both followers by the harness (no firewall): the
// followers elect one of them, publishing carries on through it, and the
// old leader commits nothing: it steps down and its own proposal is never
// acknowledged, never applied anywhere. Once healed it rejoins and every
// member holds the same state. Fails if Partition leaves raft's links up
// (no new leader, or the old one keeps leading).
func TestPartitionLeaderFromFollowers(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1})
	old := c.WaitLeader(1, 30*time.Second)
	followers := otherMembers(c, 1, old.Name())
	p := partitionPublisher(t, c, "s")
	partitionSend(t, p, 1, 10)
	oc := dial(t, clientAddr(c, old.Name())) // clients are never cut

	c.Partition([]string{old.Name()}, followers)
	// Asked at once, while it may still believe it leads: the entries it
	// proposes cannot reach a quorum. The Publish follows its Register on
	// the same connection without waiting for the answer, so that both are
	// proposed; the answers come in request order.
	_ = oc.c.NetConn().SetDeadline(time.Now().Add(15 * time.Second))
	for _, m := range []wire.Message{
		&wire.Register{ReqID: 1, Source: "cut-off", Session: "cut-off"},
		&wire.Publish{ReqID: 2, Source: "cut-off", FirstSeq: 1, Payloads: [][]byte{[]byte("x")}},
	} {
		if err := oc.c.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, what := range []string{"Register", "Publish"} {
		r, err := oc.c.Read()
		if err != nil {
			t.Fatalf("read the answer to the %s: %v", what, err)
		}
		switch r := r.(type) {
		case *wire.Ack, *wire.Registered:
			t.Fatalf("a leader cut off from its group answered a %s as committed: %#v", what, r)
		case *wire.NotLeader, *wire.Error:
			t.Logf("%s through the cut-off leader: %#v", what, r)
		default:
			t.Fatalf("%s through the cut-off leader: got %#v, want a redirect or an error", what, r)
		}
	}
	var elected *storegroup.Store
	c.Eventually(30*time.Second, "the followers elect one of them", func() bool {
		for _, f := range followers {
			if s := c.Store(f); s != nil && s.IsLeader() {
				elected = s
				return true
			}
		}
		return false
	})
	c.Eventually(10*time.Second, "the cut-off leader steps down", func() bool {
		return old.Status().State != "Leader" && !old.IsLeader()
	})
	partitionSend(t, p, 11, 20)
	c.WaitHeld(elected.Name(), "s", 20, 10*time.Second)
	if got := highSeq(t, old, "s"); got != 10 {
		t.Fatalf("the cut-off store %s holds s through %d while cut off, want 10", old.Name(), got)
	}

	c.Heal()
	c.WaitHeld(old.Name(), "s", 20, 30*time.Second)
	c.RequireSame(1, 30*time.Second)
	for _, m := range c.Members(1) {
		s := c.Store(m.Name)
		if got := highSeq(t, s, "s"); got != 20 {
			t.Fatalf("after healing %s holds s through %d, want 20", m.Name, got)
		}
		if _, ok, _ := s.Repository().Source("cut-off"); ok {
			t.Fatalf("%s holds the source only the cut-off leader was asked to publish", m.Name)
		}
	}
}

// EnsureSame tells a store that missed messages while isolated: it returns
// an error naming the store and the difference, not a test failure, and
// passes once the link is healed and the store caught up. Fails if
// EnsureSame compared nothing, or if Isolate left open connections up (the
// leader would go on replicating to the store).
func TestPartitionEnsureSameReportsAnIsolatedStore(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1})
	leader := c.WaitLeader(1, 30*time.Second)
	p := partitionPublisher(t, c, "s")
	partitionSend(t, p, 1, 3)
	c.WaitHeld(leader.Name(), "s", 3, 10*time.Second)
	c.RequireSame(1, 30*time.Second)

	victim := otherMembers(c, 1, leader.Name())[0]
	c.Isolate(victim)
	partitionSend(t, p, 4, 6)
	c.WaitHeld(leader.Name(), "s", 6, 10*time.Second)
	err := c.EnsureSame(1, time.Second)
	if err == nil {
		t.Fatalf("EnsureSame passed although %s was isolated while 4..6 were published", victim)
	}
	want := fmt.Sprintf(`%s differs from %s: source "s": high sequence: %s has 6, %s has 3`, victim, leader.Name(), leader.Name(), victim)
	if !errors.Is(err, clustertest.ErrNotSame) || !strings.Contains(err.Error(), want) {
		t.Fatalf("EnsureSame: %v\nwant ErrNotSame reporting %q", err, want)
	}

	c.Heal()
	c.RequireSame(1, 30*time.Second)
	if got := highSeq(t, c.Store(victim), "s"); got != 6 {
		t.Fatalf("%s holds s through %d after healing, want 6", victim, got)
	}
}
