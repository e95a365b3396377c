package publisher_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

// A publisher restarted with its state file takes its source over at once,
// long before the stores' source-activity-timeout, and its previous
// incarnation (here still running, the harder case) is fenced: its later
// messages are refused and it stops with ErrFenced. A different publisher
// still waits.
func TestRestartedPublisherTakesItsSourceOverAtOnce(t *testing.T) {
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "pub.state")
	newPub := func(ctx context.Context, stateFile string) (*publisher.Publisher, error) {
		cfg := publisher.DefaultConfig()
		cfg.Source, cfg.Groups, cfg.StateFile, cfg.RegisterTimeout = "job", c.Addrs(), stateFile, 300*time.Millisecond
		return publisher.New(ctx, cfg)
	}
	first, err := newPub(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for i := 1; i <= 100; i++ {
		if _, err := first.Send(ctx, []byte(fmt.Sprintf("first %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Another publisher (no state file, another identity) is refused.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	_, err = newPub(short, "")
	cancelShort()
	if !errors.Is(err, publisher.ErrSourceBusy) {
		t.Fatalf("a different publisher: %v, want ErrSourceBusy", err)
	}

	start := time.Now()
	second, err := newPub(ctx, state)
	if err != nil {
		t.Fatalf("the restarted publisher: %v", err)
	}
	defer second.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the restarted publisher took %v to register", took)
	}
	if second.FirstSeq() != 101 {
		t.Fatalf("resumed at %d, want 101", second.FirstSeq())
	}
	for i := 101; i <= 110; i++ {
		if _, err := second.Send(ctx, []byte(fmt.Sprintf("second %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// The first incarnation still thinks it owns the source: its next
	// messages reuse 101.. and must not be stored; it stops.
	c.Eventually(20*time.Second, "the first incarnation is fenced", func() bool {
		_, err := first.Send(ctx, []byte("late"))
		return errors.Is(err, publisher.ErrFenced)
	})
	for g := 1; g <= 2; g++ {
		msgs, err := c.WaitLeader(g, 10*time.Second).Repository().Read("job", 101, 110, 0, 0)
		if err != nil || len(msgs) != 10 {
			t.Fatalf("group %d: %d messages, %v", g, len(msgs), err)
		}
		for _, m := range msgs {
			if want := fmt.Sprintf("second %d", m.Seq); string(m.Payload) != want {
				t.Fatalf("group %d seq %d holds %q, want %q", g, m.Seq, m.Payload, want)
			}
		}
	}
}
