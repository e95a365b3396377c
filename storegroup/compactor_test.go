package storegroup_test

import (
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
)

// With raft's own schedule too slow to matter (an hour between checks), a
// store still compacts its log once LogBytes were written, down to what
// retention keeps: the log is bounded by bytes, not only by entry counts.
func TestLogIsCompactedByBytes(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) {
		cfg.SnapshotThreshold = 1 << 30
		cfg.SnapshotInterval = time.Hour
		cfg.TrailingLogs = 4096
		cfg.LogBytes = 64 << 10
		cfg.RetentionMaxMessages = 100
		cfg.RetentionInterval = 100 * time.Millisecond
	}})
	publishEntries(t, c, "big", 2000, 1000, 10) // 200 entries of about 10 KB: 2 MB
	for _, m := range c.Members(1) {
		s := c.Store(m.Name)
		c.Eventually(30*time.Second, m.Name+" compacts its log by bytes", func() bool {
			first, last, _, err := s.LogBounds()
			// 64 KiB of trailing entries of about 10 KB: some 70 entries, not 4096.
			return err == nil && s.Status().SnapshotIndex > 0 && first > 1 && last-first < 150
		})
	}
}
