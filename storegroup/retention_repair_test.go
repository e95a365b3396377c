package storegroup_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"umstore/internal/testmain"

	"umstore/internal/clustertest"
	"umstore/receiver"
	"umstore/storegroup"
)

// publishDirectRange stores messages first..last of source in one group
// only, 500 to a Publish.
func publishDirectRange(t *testing.T, c *clustertest.Cluster, group int, source string, first, last uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for from := first; from <= last; from += 500 {
		var payloads [][]byte
		for seq := from; seq <= min(last, from+499); seq++ {
			payloads = append(payloads, fmt.Appendf(nil, "%s-%d", source, seq))
		}
		if err := c.PublishDirect(ctx, group, source, from, payloads); err != nil {
			t.Fatal(err)
		}
	}
}

// Retention keeps 1,000 messages; group 2 has no quorum while 3,000 are
// published into group 1, whose retention releases 1-2000. Once group 2
// is back, repair copies 2001-3000 and group 2 releases 1-2000 too, as
// retention, not as a gap: its status, its gap ranges and a reader of
// group 2 alone call it released. Before, group 2 reported gap [1,2000]
// for good and a read from 1 ended in a *MissingError.
func TestRepairedGroupReleasesWhatTheOtherReleased(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) {
		cfg.RetentionMaxMessages = 1000
		cfg.RetentionInterval = 100 * time.Millisecond
		cfg.RepairInterval = 200 * time.Millisecond
	})
	g2 := c.Members(2)
	c.WaitLeader(2, 10*time.Second)
	c.Kill(g2[0].Name)
	c.Kill(g2[1].Name) // group 2 has no quorum
	publishDirectRange(t, c, 1, "ret", 1, 3000)
	c.Eventually(20*time.Second, "group 1 released 1-2000", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, ok, err := l.Repository().Source("ret")
		return err == nil && ok && info.TrimmedThrough == 2000 && info.Count == 1000
	})
	c.StartStore(g2[0].Name)
	c.StartStore(g2[1].Name)
	c.Eventually(30*time.Second, "every store of group 2 holds 2001-3000 and released 1-2000", func() bool {
		for _, m := range g2 {
			s := c.Store(m.Name)
			if s == nil {
				return false
			}
			info, ok, err := s.Repository().Source("ret")
			if err != nil || !ok || info.HighSeq != 3000 || info.Count != 1000 {
				return false
			}
		}
		return true
	})
	deadline := time.Now().Add(5 * time.Second) // the release follows the copies within a few passes
	for _, m := range g2 {
		for {
			info, _, _ := c.Store(m.Name).Repository().Source("ret")
			if len(info.Gaps) == 0 && info.TrimmedThrough == 2000 && info.LowSeq == 2001 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("store %s of the repaired group: gaps %v, released through %d, oldest %d; want no gap, 1-2000 released", m.Name, info.Gaps, info.TrimmedThrough, info.LowSeq)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, ss := range c.WaitLeader(2, 10*time.Second).Status().Sources {
		if ss.Name == "ret" && (ss.Gaps != 0 || len(ss.GapRanges) != 0) {
			t.Fatalf("group 2 status reports gaps %d %v for a released range", ss.Gaps, ss.GapRanges)
		}
	}

	for _, tc := range []struct {
		name     string
		group    int // 0: every group
		from     uint64
		released []receiver.Range
	}{
		{"from oldest, every group", 0, receiver.Oldest, nil},
		{"from oldest, group 2 alone", 2, receiver.Oldest, nil},
		{"from 1, every group", 0, 1, []receiver.Range{{From: 1, To: 2000}}},
		{"from 1, group 2 alone", 2, 1, []receiver.Range{{From: 1, To: 2000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := receiver.DefaultConfig()
			cfg.Source, cfg.Groups, cfg.Group = "ret", c.Addrs(), tc.group
			r, err := receiver.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			n := 0
			err = r.Read(ctx, tc.from, 3000, func(receiver.Message) error { n++; return nil })
			var re *receiver.ReleasedError
			switch {
			case n != 1000:
				t.Fatalf("read %d messages, want 1000 (err %v)", n, err)
			case tc.released == nil && err != nil:
				t.Fatalf("read from the oldest retained: %v, want no error", err)
			case tc.released != nil && (!errors.As(err, &re) || fmt.Sprint(re.Ranges) != fmt.Sprint(tc.released)):
				t.Fatalf("read from %d: %v, want the released ranges %v named as released", tc.from, err, tc.released)
			}
		})
	}
}
