package storegroup_test

import (
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/storegroup"
)

// A group's leadership moves to its preferred member once that member is
// caught up, stays there, moves away only when it fails, and comes back
// once it has been caught up for the settle time again.
func TestLeadershipMovesToThePreferredHost(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) {
		cfg.PreferredHost, cfg.PreferredMembers = "B", []string{"G1S3"}
		cfg.LeaderSettle, cfg.LeaderMinInterval = 500*time.Millisecond, time.Second
	}})
	waitLeaderIs := func(name string, within time.Duration) {
		t.Helper()
		c.Eventually(within, "G1S3 leads group 1", func() bool {
			l := c.Leader(1)
			return l != nil && l.Name() == name
		})
	}
	waitLeaderIs("G1S3", 20*time.Second)
	c.Eventually(5*time.Second, "the leader's status says it is on its preferred host", func() bool {
		l := c.Leader(1)
		return l != nil && l.Status().Placement == "led from its preferred host B"
	})
	// Leadership stays put: a few seconds later, no more moves.
	time.Sleep(3 * time.Second)
	if l := c.Leader(1); l == nil || l.Name() != "G1S3" {
		t.Fatalf("leadership moved away from the preferred member: %v", l)
	}
	c.Kill("G1S3")
	l := c.WaitLeader(1, 20*time.Second)
	if l.Name() == "G1S3" {
		t.Fatal("a killed store leads")
	}
	c.StartStore("G1S3")
	waitLeaderIs("G1S3", 30*time.Second)
}

// A new group is bootstrapped by its first member on the preferred host,
// so it is led from there from its first election: with placement off
// (no transfer can put it there), the preferred member leads.
func TestNewGroupStartsOnThePreferredHost(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) {
		cfg.PreferredHost, cfg.PreferredMembers = "B", []string{"G1S2", "G1S3"}
		cfg.LeaderSettle = 0
	}})
	if l := c.WaitLeader(1, 20*time.Second); l.Name() != "G1S2" {
		t.Fatalf("the new group's first leader is %s, want G1S2, the first member on its preferred host", l.Name())
	}
}
