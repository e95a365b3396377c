package storegroup_test

import (
	"context"
	"errors"
	"testing"
	"time"
	"umstore/internal/testmain"

	"umstore/internal/clustertest"
	"umstore/receiver"
	"umstore/storegroup"
)

// A backlog of many retention steps is released in one pass, not a step
// per pass: with one step per RetentionInterval a source published faster
// than a step per interval grew without bound (the 30-minute soak of
// BENCH.md filled the disk).
func TestRetentionReleasesABacklogInOnePass(t *testing.T) {
	testmain.Slow(t)
	defer storegroup.SetRetentionStep(50)()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.RetentionMaxMessages = 100
		cfg.RetentionInterval = 3 * time.Second
	})
	publishRange(t, c, "backlog", 1000, 50)
	// 900 to release at 50 a step: 18 passes, 54 s, if a pass took one.
	c.Eventually(10*time.Second, "the leader keeps exactly the newest 100", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, ok, err := l.Repository().Source("backlog")
		return err == nil && ok && info.TrimmedThrough == 900 && info.Count == 100
	})
}

// Retention drops the oldest messages on every member of every group alike
// (through each group's log), repair does not copy them back, and a reader
// is told exactly which range was released.
func TestRetentionByMessagesIsDeterministic(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) {
		cfg.RetentionMaxMessages = 100
		cfg.RetentionInterval = 100 * time.Millisecond
		cfg.RepairInterval = 100 * time.Millisecond
	})
	publishRange(t, c, "ret", 1000, 50)
	c.Eventually(30*time.Second, "every store keeps exactly the newest 100", func() bool {
		for g := 1; g <= 2; g++ {
			for _, m := range c.Members(g) {
				info, ok, err := c.Store(m.Name).Repository().Source("ret")
				if err != nil || !ok || info.Count != 100 || info.LowSeq != 901 || info.HighSeq != 1000 || info.TrimmedThrough != 900 {
					return false
				}
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // several repair passes
	for g := 1; g <= 2; g++ {
		if st := c.WaitLeader(g, 10*time.Second).Status().Repair; st.RepairedMessages != 0 {
			t.Fatalf("group %d repair copied %d messages back after retention", g, st.RepairedMessages)
		}
	}
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = "ret", c.Addrs()
	r, _ := receiver.New(cfg)
	defer r.Close()
	n := 0
	err := r.Read(context.Background(), 1, 1000, func(receiver.Message) error { n++; return nil })
	var re *receiver.ReleasedError
	if !errors.As(err, &re) || len(re.Ranges) != 1 || re.Ranges[0] != (receiver.Range{From: 1, To: 900}) || n != 100 {
		t.Fatalf("read after retention: %d messages, %v; want 100 and the released range 1-900 named as released", n, err)
	}
}

// With an age limit, messages older than it are released.
func TestRetentionByAge(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.RetentionMaxAge = 300 * time.Millisecond
		cfg.RetentionInterval = 100 * time.Millisecond
	})
	publishRange(t, c, "old", 200, 50)
	c.Eventually(30*time.Second, "the aged messages are released", func() bool {
		info, ok, err := c.WaitLeader(1, 10*time.Second).Repository().Source("old")
		return err == nil && ok && info.Count == 0 && info.HighSeq == 200
	})
}
