package publisher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/receiver"
)

// Confirmed delivery counts distinct receivers: one receiver, reported by
// both groups it acknowledges to, is one confirmation, not two; a second
// receiver's consumption confirms what both consumed, and only that.
func TestConfirmedDeliveryCountsDistinctReceivers(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var mu sync.Mutex
	var confirmed []uint64 // every sequence number OnConfirmed reported, in order
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "confirm", c.Addrs()
	cfg.ConfirmedDelivery = 2
	cfg.OnConfirmed = func(first, last uint64) {
		mu.Lock()
		defer mu.Unlock()
		for s := first; s <= last; s++ {
			confirmed = append(confirmed, s)
		}
	}
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 100; i++ {
		if _, err := p.Send(ctx, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitAllGroups(ctx); err != nil {
		t.Fatal(err)
	}
	consume := func(name string, to uint64) {
		rcfg := receiver.DefaultConfig()
		rcfg.Source, rcfg.Groups, rcfg.Name = "confirm", c.Addrs(), name
		r, err := receiver.New(rcfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Read(ctx, receiver.Resume, to, func(receiver.Message) error { return nil }); err != nil {
			t.Fatal(err)
		}
		r.Close() // records the position with both groups
	}
	consume("a", 100)
	c.Eventually(10*time.Second, "both groups record a at 100", func() bool {
		for g := 1; g <= 2; g++ {
			pos, _, _, _ := c.Leader(g).Repository().Receiver("confirm", "a")
			if pos.Seq != 100 {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // several Delivery reports: still one receiver
	mu.Lock()
	if len(confirmed) != 0 || p.Stats().Delivered != 0 {
		t.Fatalf("one receiver, reported by two groups, confirmed %d messages (delivered %d)", len(confirmed), p.Stats().Delivered)
	}
	mu.Unlock()
	consume("b", 40)
	c.Eventually(10*time.Second, "1..40 confirmed by a and b", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(confirmed) == 40
	})
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	for i, s := range confirmed {
		if s != uint64(i+1) {
			t.Fatalf("confirmed %v: not 1..40 in order", confirmed)
		}
	}
	if len(confirmed) != 40 || p.Stats().Delivered != 40 {
		t.Fatalf("confirmed %d (delivered %d), want 40: b consumed no further", len(confirmed), p.Stats().Delivered)
	}
	mu.Unlock()
}

// With RetainUntilConfirmed a message counts in flight until confirmed:
// with no receiver, Send stops at FlightSize.
func TestRetainUntilConfirmedHoldsTheFlight(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "held", c.Addrs()
	cfg.ConfirmedDelivery, cfg.RetainUntilConfirmed = 1, true
	cfg.FlightSize, cfg.Flight = 10, publisher.FlightRefuse
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 10; i++ {
		if _, err := p.Send(ctx, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, []byte("m")); err == nil {
		t.Fatal("Send went beyond FlightSize with nothing confirmed")
	}
	rcfg := receiver.DefaultConfig()
	rcfg.Source, rcfg.Groups, rcfg.Name = "held", c.Addrs(), "only"
	r, _ := receiver.New(rcfg)
	if err := r.Read(ctx, receiver.Resume, 10, func(receiver.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c.Eventually(10*time.Second, "the confirmation frees the flight", func() bool {
		_, err := p.Send(ctx, []byte("m"))
		return err == nil
	})
	if st := p.Stats(); st.Delivered != 10 {
		t.Fatalf("delivered %d, want 10", st.Delivered)
	}
}
