package storegroup

import (
	"context"
	"testing"
	"time"
)

func TestVoteGateAllows(t *testing.T) {
	target := logPosition{Term: 3, Index: 100}
	tests := []struct {
		name string
		cand logPosition
		want bool
	}{
		{"same position", logPosition{3, 100}, true},
		{"longer log, same term", logPosition{3, 150}, true},
		{"later term, shorter log", logPosition{4, 10}, true},
		{"shorter log, same term", logPosition{3, 99}, false},
		{"longer log, older term", logPosition{2, 500}, false},
		{"empty log", logPosition{}, false},
	}
	var g voteGate
	for _, tt := range tests {
		if !g.allows(tt.cand) {
			t.Fatalf("an open gate refused %s", tt.name)
		}
	}
	g.close(target)
	for _, tt := range tests {
		if got := g.allows(tt.cand); got != tt.want {
			t.Errorf("%s: allows(%v) = %v, want %v", tt.name, tt.cand, got, tt.want)
		}
	}
	g.open()
	if !g.allows(logPosition{}) {
		t.Fatal("an opened gate still refuses")
	}
}

func TestHostAdmissionOnePerGroup(t *testing.T) {
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
