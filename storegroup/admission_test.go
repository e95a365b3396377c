package storegroup

import (
	"context"
	"testing"
	"time"
)

func TestHostAdmissionOnePerGroup(t *testing.T) {
	t.Parallel()
	h := NewHostAdmission()
	ctx := context.Background()
	rel1, err := h.Acquire(ctx, 1, "G1S1")
	if err != nil {
		t.Fatal(err)
	}
	// Another group is independent.
	rel2, err := h.Acquire(ctx, 2, "G2S1")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.CatchingUp(); got[1] != "G1S1" || got[2] != "G2S1" {
		t.Fatalf("CatchingUp = %v", got)
	}
	// A second store of group 1 waits until the first releases.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := h.Acquire(short, 1, "G1S2"); err == nil {
		t.Fatal("two empty stores of group 1 admitted together")
	}
	done := make(chan struct{})
	go func() {
		rel, err := h.Acquire(ctx, 1, "G1S2")
		if err == nil {
			rel()
		}
		close(done)
	}()
	rel1()
	rel1() // releasing twice is harmless
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("G1S2 was not admitted after G1S1 released")
	}
	rel2()
}
