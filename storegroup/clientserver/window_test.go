package clientserver

import (
	"context"
	"testing"
	"time"
)

// A connection's window holds maxProposalsInFlight slots: one more waits
// until a slot is released, or gives up when the connection ends.
func TestWindowBoundsProposalsInFlight(t *testing.T) {
	w := newWindow()
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; i < maxProposalsInFlight; i++ {
		if !w.take(ctx) {
			t.Fatalf("slot %d refused", i+1)
		}
	}
	took := make(chan bool)
	go func() { took <- w.take(ctx) }()
	select {
	case <-took:
		t.Fatalf("slot %d taken while %d are in flight", maxProposalsInFlight+1, maxProposalsInFlight)
	case <-time.After(50 * time.Millisecond):
	}
	w.release()
	if !<-took {
		t.Fatal("a released slot was not taken")
	}
	go func() { took <- w.take(ctx) }()
	cancel()
	if <-took {
		t.Fatal("a slot was taken from a full window after the connection ended")
	}
}
