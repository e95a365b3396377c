package storegroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

func fastRepair(cfg *storegroup.Config) { cfg.RepairInterval = 200 * time.Millisecond }

// Group 1 loses its quorum while group 2 keeps publishing stable; when
// group 1 regains its quorum its leader copies what it missed from group 2,
// so every store of both groups holds every message, with no conflicts.
func TestRepairAfterQuorumLoss(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, fastRepair)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.RetentionSizeLimit = "r", c.Addrs(), 1 // release as soon as stable: the publisher cannot fill group 1 itself
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(from, to int) {
		for i := from; i <= to; i++ {
			if _, err := p.Send(ctx, []byte(fmt.Sprintf("m%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	send(1, 1000)
	g1 := c.Members(1)
	c.Kill(g1[0].Name)
	c.Kill(g1[1].Name) // group 1 has no quorum
	send(1001, 3000)   // stable through group 2 alone
	c.StartStore(g1[0].Name)
	c.StartStore(g1[1].Name)
	c.Eventually(60*time.Second, "every store of both groups holds 1..3000", func() bool {
		for g := 1; g <= 2; g++ {
			for _, m := range c.Members(g) {
				s := c.Store(m.Name)
				if s == nil {
					return false
				}
				info, ok, err := s.Repository().Source("r")
				if err != nil || !ok || info.HighSeq != 3000 || info.Count != 3000 || len(info.Gaps) != 0 {
					return false
				}
			}
		}
		return true
	})
	l := c.WaitLeader(1, 10*time.Second)
	st := l.Status().Repair
	t.Logf("group 1 leader %s repair: %+v", l.Name(), st)
	if st.Conflicts != 0 {
		t.Fatalf("repair reported %d conflicts", st.Conflicts)
	}
	// Same payloads in both groups.
	for seq := uint64(1); seq <= 3000; seq += 499 {
		a, _ := c.WaitLeader(1, 10*time.Second).Repository().Read("r", seq, seq, 1, 0)
		b, _ := c.WaitLeader(2, 10*time.Second).Repository().Read("r", seq, seq, 1, 0)
		if len(a) != 1 || len(b) != 1 || string(a[0].Payload) != string(b[0].Payload) || string(a[0].Payload) != fmt.Sprintf("m%d", seq) {
			t.Fatalf("seq %d: group 1 %v, group 2 %v", seq, a, b)
		}
	}
}
