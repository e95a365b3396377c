package receiver_test

import (
	"context"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/receiver"
)

// Reading from one group only (umrcv --group N), a reader waits while that
// group has no leader, within its context, instead of giving up after one
// round of attempts: there is no other group to read from. Before, it
// failed at once with "no store group reachable".
func TestOneGroupReaderWaitsForAnElection(t *testing.T) {
	testmain.Slow(t)
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.PublishDirect(ctx, 1, "s", 1, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	g1 := c.Members(1)
	c.Kill(g1[0].Name)
	c.Kill(g1[1].Name) // group 1 has no quorum: no leader until one is back
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group = "s", c.Addrs(), 1
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		time.Sleep(3 * time.Second) // the group stays leaderless for longer than one round of attempts
		c.StartStore(g1[0].Name)
	}()
	readCtx, cancelRead := context.WithTimeout(ctx, 20*time.Second)
	defer cancelRead()
	high, err := r.High(readCtx)
	if err != nil || high != 2 {
		t.Fatalf("High = %d, %v; want 2 once group 1 has a leader again", high, err)
	}
	// And within the context only: a group that never comes back ends it.
	c.Kill(g1[0].Name)
	c.Eventually(10*time.Second, "group 1 has no leader", func() bool { return c.Leader(1) == nil })
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	start := time.Now()
	if _, err := r.High(short); err == nil {
		t.Fatal("High succeeded with group 1 down")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("gave up %v after a 2s context", took)
	}
}
