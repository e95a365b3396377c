package storegroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"umstore/internal/testmain"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/clustertest"
	"umstore/receiver"
	"umstore/storegroup"
)

// Groups 1 and 2 hold different payloads for 1-5 of one source (two
// publishers, each given one group). Group 1's leader finds the conflict
// and shows it: RepairStatus.IntergroupConflicts, the source's
// Conflicts in the status, umstore_intergroup_conflicts and
// umstore_consistency_violations_total (before: 0, 0, nothing, 0, logged
// once). A receiver of both groups gets group 1's payloads (the lowest
// group index that holds them) whichever group it read before: before,
// once group 1 had been unreachable it went on reading group 2's.
func TestConflictsBetweenGroupsAreCountedAndResolved(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	// Group 2 never repairs: it cannot copy group 1's payloads before its
	// own are published (both groups then agree, through a conflict at
	// apply instead), and group 1 holds its own before group 2 holds any.
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) {
		fastRepair(cfg)
		if cfg.Group == 2 {
			cfg.RepairInterval = 0
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for g, tag := range []string{1: "a", 2: "b"} {
		if g == 0 {
			continue
		}
		var payloads [][]byte
		for i := 1; i <= 5; i++ {
			payloads = append(payloads, fmt.Appendf(nil, "%s%d", tag, i))
		}
		if err := c.PublishDirect(ctx, g, "c", 1, payloads); err != nil {
			t.Fatal(err)
		}
	}
	var last string // what the leaders showed last, said if the wait fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("last seen:", last)
		}
	})
	{
		const g = 1
		var l *storegroup.Store // the leader that showed them
		c.Eventually(60*time.Second, "group 1's leader shows the 5 conflicts", func() bool {
			l = c.Leader(g)
			if l == nil {
				return false
			}
			st := l.Status()
			last = fmt.Sprintf("group %d leader %s: repair %+v, sources %+v", g, l.Name(), st.Repair, st.Sources)
			for _, s := range st.Sources {
				if s.Name == "c" && s.Conflicts == 5 && st.Repair.IntergroupConflicts == 5 {
					return true
				}
			}
			return false
		})
		reg := prometheus.NewRegistry()
		reg.MustRegister(l.Collector())
		me := map[string]string{"store": l.Name()}
		if v := metricValue(t, reg, "umstore_intergroup_conflicts", me); v != 5 {
			t.Fatalf("group %d: umstore_intergroup_conflicts = %v, want 5", g, v)
		}
		if v := metricValue(t, reg, "umstore_consistency_violations_total", me); v < 5 {
			t.Fatalf("group %d: umstore_consistency_violations_total = %v, want at least 5", g, v)
		}
	}

	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = "c", c.Addrs()
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := func() string {
		var got []string
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := r.Read(rctx, 1, 5, func(m receiver.Message) error { got = append(got, string(m.Payload)); return nil }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	g1 := c.Members(1)
	c.Kill(g1[0].Name)
	c.Kill(g1[1].Name) // group 1 has no quorum: only group 2 is read
	if got := read(); got != "b1 b2 b3 b4 b5" {
		t.Fatalf("with group 1 unreachable: %q, want group 2's payloads", got)
	}
	c.StartStore(g1[0].Name)
	c.StartStore(g1[1].Name)
	c.WaitLeader(1, 20*time.Second)
	time.Sleep(2100 * time.Millisecond) // receiver's downFor: group 1 is asked first again
	if got := read(); got != "a1 a2 a3 a4 a5" {
		t.Fatalf("with both groups reachable: %q, want group 1's payloads (the lowest group index)", got)
	}
}
