package clustertest_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
)

// syncBuffer is a bytes.Buffer safe for the stores' concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Options shape the cluster: group size, the stores' configuration and
// where their logs go.
func TestOptions(t *testing.T) {
	var logs syncBuffer
	tuned := map[string]bool{} // Tune runs in the goroutine that opens the store
	c := clustertest.New(t, clustertest.Options{
		StoresPerGroup: 5,
		Logger:         slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Tune: func(cfg *storegroup.Config) {
			tuned[cfg.Name] = true
		},
	})
	if got := len(c.Members(1)); got != 5 {
		t.Fatalf("group 1 has %d members, want 5", got)
	}
	leader := c.WaitLeader(1, 30*time.Second)
	for _, m := range c.Members(1) {
		if c.Store(m.Name) == nil || !tuned[m.Name] {
			t.Fatalf("store %s: running %v, tuned %v", m.Name, c.Store(m.Name) != nil, tuned[m.Name])
		}
	}
	c.Eventually(10*time.Second, "the leader's log reaches the logger", func() bool {
		return strings.Contains(logs.String(), "store="+leader.Name())
	})
	c.RequireSame(1, 30*time.Second)
}
