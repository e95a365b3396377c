package storegroup_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

// publishN publishes n messages of size bytes on source and returns the
// rate at which they became stable.
func publishN(b *testing.B, c *clustertest.Cluster, source string, n, size int, retention int64) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.RegisterTimeout = source, c.Addrs(), time.Second
	if retention > 0 {
		cfg.RetentionSizeLimit = retention
	}
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := p.Send(ctx, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkRepairWhilePublishing measures intergroup repair: group 1 misses
// `gap` messages of 1 KiB published while it had no quorum; when it comes
// back its leader copies them from group 2 while a publisher keeps
// publishing. It reports the repair rate and the publisher's rate with and
// without repair running. Run with:
//
//	go test ./storegroup -run XXX -bench RepairWhilePublishing -benchtime 1x
func BenchmarkRepairWhilePublishing(b *testing.B) {
	const gap, live, size = 50000, 20000, 1024
	for i := 0; i < b.N; i++ {
		c := clustertest.Start(b, 2, func(cfg *storegroup.Config) { cfg.RepairInterval = 100 * time.Millisecond })
		base := publishN(b, c, fmt.Sprintf("base%d", i), live, size, 0)

		g1 := c.Members(1)
		c.Kill(g1[0].Name)
		c.Kill(g1[1].Name)
		publishN(b, c, "gap", gap, size, 1) // stable through group 2 only; released at once
		c.StartStore(g1[0].Name)
		c.StartStore(g1[1].Name)
		start := time.Now()

		var wg sync.WaitGroup
		var during float64
		wg.Add(1)
		go func() { defer wg.Done(); during = publishN(b, c, fmt.Sprintf("live%d", i), live, size, 0) }()
		c.Eventually(5*time.Minute, "group 1 holds the gap", func() bool {
			l := c.Leader(1)
			if l == nil {
				return false
			}
			info, ok, err := l.Repository().Source("gap")
			return err == nil && ok && info.Count == gap
		})
		repair := time.Since(start)
		wg.Wait()
		b.ReportMetric(float64(gap)/repair.Seconds(), "repair_msgs/s")
		b.ReportMetric(float64(gap*size)/repair.Seconds()/1e6, "repair_MB/s")
		b.ReportMetric(base, "publish_msgs/s_idle")
		b.ReportMetric(during, "publish_msgs/s_during_repair")
		c.Close()
	}
}
