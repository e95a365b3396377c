package storegroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
)

// Two groups that hold different payloads for a sequence number both hold
// (two publishers wrote the source into different groups) are found by
// repair's digest comparison and reported as a consistency violation;
// neither copy is changed. Repair only copies what a group misses, so
// before the comparison existed nothing noticed.
func TestRepairFindsDifferentPayloads(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, fastRepair)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mk := func(n int, differAt int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte(fmt.Sprintf("m%d", i+1))
			if i+1 == differAt {
				out[i] = []byte("another publisher's message")
			}
		}
		return out
	}
	// The groups cannot reach each other while both are written: otherwise
	// repair may copy one group's messages into the other before the
	// other's own publish arrives (the copy wins, as it should, and both
	// hold the same payloads).
	var g1, g2 []string
	for _, m := range c.Members(1) {
		g1 = append(g1, m.Name)
	}
	for _, m := range c.Members(2) {
		g2 = append(g2, m.Name)
	}
	c.Partition(g1, g2)
	if err := c.PublishDirect(ctx, 1, "s", 1, mk(5000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishDirect(ctx, 2, "s", 1, mk(5000, 4321)); err != nil {
		t.Fatal(err)
	}
	c.Heal()
	c.Eventually(90*time.Second, "both leaders report seq 4321 as differing", func() bool {
		for g := 1; g <= 2; g++ {
			l := c.Leader(g)
			if l == nil {
				return false
			}
			st := l.Status().Repair
			if st.Mismatches != 1 || !strings.Contains(st.LastMismatch, "from 4321") {
				return false
			}
		}
		return true
	})
	for g := 1; g <= 2; g++ {
		msgs, err := c.WaitLeader(g, 10*time.Second).Repository().Read("s", 4321, 4321, 1, 0)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("group %d: %v %v", g, msgs, err)
		}
		want := "m4321"
		if g == 2 {
			want = "another publisher's message"
		}
		if string(msgs[0].Payload) != want {
			t.Fatalf("group %d's copy changed to %q", g, msgs[0].Payload)
		}
	}
	t.Logf("group 1: %+v", c.Leader(1).Status().Repair)
}
