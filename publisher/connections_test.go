package publisher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

// Publishers given one Connections reach each store over one connection:
// thirty of them cost each group's leader one client connection, not
// thirty. Each still registers, streams and is acknowledged on its own, in
// order, through a leader's death, and every message reads back.
func TestPublishersShareConnectionsThroughLeaderKill(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	conns := publisher.NewConnections()
	const sources, n = 30, 300
	pubs := make([]*publisher.Publisher, sources)
	var mu sync.Mutex
	next := make([]uint64, sources) // the next sequence number each source's OnStable must report
	var orderErr error
	var wg sync.WaitGroup
	for i := range pubs {
		next[i] = 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			pubs[i] = newPublisher(t, c, fmt.Sprintf("shared-%d", i), func(cfg *publisher.Config) {
				cfg.Connections = conns
				cfg.OnStable = func(first, last uint64) {
					mu.Lock()
					defer mu.Unlock()
					if first != next[i] && orderErr == nil {
						orderErr = fmt.Errorf("source %d: stability jumped from %d to %d", i, next[i], first)
					}
					next[i] = last + 1
				}
			})
		}()
	}
	wg.Wait()
	for g := 1; g <= 2; g++ {
		l := c.WaitLeader(g, 30*time.Second)
		if got := clientConnections(t, l); got > 2 {
			t.Errorf("group %d's leader %s holds %d client connections for %d publishers sharing connections, want at most 2", g, l.Name(), got, sources)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	send := func(from, to uint64) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, sources)
		for i, p := range pubs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := from; seq <= to; seq++ {
					got, err := p.Send(ctx, payload(seq))
					if err != nil || got != seq {
						errs <- fmt.Errorf("source %d send %d: got %d, %v", i, seq, got, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	send(1, n/2)
	killed := c.WaitLeader(1, 30*time.Second).Name()
	c.Kill(killed)
	send(n/2+1, n)
	for i, p := range pubs {
		if err := p.Flush(ctx); err != nil {
			t.Fatalf("source %d flush: %v (stats %+v)", i, err, p.Stats())
		}
		if err := p.WaitAllGroups(ctx); err != nil {
			t.Fatalf("source %d: wait for both groups: %v (stats %+v)", i, err, p.Stats())
		}
	}
	mu.Lock()
	for i := range next {
		if next[i] != n+1 && orderErr == nil {
			orderErr = fmt.Errorf("source %d: stability reported through %d of %d", i, next[i]-1, n)
		}
	}
	mu.Unlock()
	if orderErr != nil {
		t.Fatal(orderErr)
	}
	for _, i := range []int{0, sources / 2, sources - 1} {
		src := fmt.Sprintf("shared-%d", i)
		readAll(t, c, src, 1, n)
		readAll(t, c, src, 2, n)
	}
	t.Logf("killed %s; source 0's stats %+v", killed, pubs[0].Stats())
}

// clientConnections is the store's umstore_client_connections gauge.
func clientConnections(t *testing.T, s *storegroup.Store) int {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "umstore_client_connections" {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	t.Fatal("no umstore_client_connections metric")
	return 0
}
