package publisher_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
)

// settledFile reports whether the state file at path says settled.
func settledFile(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Settled bool `json:"settled"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Settled
}

// A publisher that closed with everything stable, after a registration
// every group answered, leaves a settled state file; restarted from it
// while a group is down, the next one resumes as soon as the other group
// answers, not after RegisterTimeout. One whose own registration settled
// for fewer groups, from a file that was not settled, leaves its file
// unsettled: the silent group may hold what an earlier incarnation sent.
func TestSettledStateFileResumesWithoutWaiting(t *testing.T) {
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "orders.state")
	send := func(p *publisher.Publisher, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := p.Send(ctx, []byte("m")); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := newPublisher(t, c, "orders", func(cfg *publisher.Config) { cfg.StateFile = state })
	send(first, 100)
	first.Close()
	if !settledFile(t, state) {
		t.Fatal("a publisher that heard every group and closed with everything stable left an unsettled state file")
	}
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	start := time.Now()
	second := newPublisher(t, c, "orders", func(cfg *publisher.Config) { cfg.StateFile = state }) // RegisterTimeout 5 s
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("from a settled state file, registration with group 1 down took %v", took)
	}
	if got := second.FirstSeq(); got != 101 {
		t.Fatalf("resumed at %d, want 101", got)
	}
	if settledFile(t, state) {
		t.Fatal("a running publisher's state file still says settled: a crash now would leave it wrong")
	}
	send(second, 10)
	second.Close()
	if !settledFile(t, state) {
		t.Fatal("a publisher resumed from a settled file and closed with everything stable left an unsettled file")
	}

	// From an unsettled file, a registration that settles for group 2
	// alone after RegisterTimeout leaves the file unsettled.
	other := filepath.Join(t.TempDir(), "other.state")
	third := newPublisher(t, c, "other", func(cfg *publisher.Config) {
		cfg.StateFile, cfg.RegisterTimeout = other, 300*time.Millisecond
	})
	send(third, 10)
	third.Close()
	if settledFile(t, other) {
		t.Fatal("a publisher that registered without hearing group 1, from no settled file, left a settled file")
	}
}
