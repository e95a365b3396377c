package publisher

import (
	"testing"
	"time"
)

// The silence bound doubles only when the leader that stalled leads again,
// stops at maxAckBackoff times its base, and comes back to the base once a
// connection ran ackRecoverAfter without stalling.
func TestAckWaitBacksOffForASlowLeaderOnly(t *testing.T) {
	t.Parallel()
	const base = time.Second
	steps := []struct {
		name    string
		do      func(a *ackWait) bool
		grew    bool
		current time.Duration
	}{
		{"a new leader after a stall", func(a *ackWait) bool { a.stalled("A"); return a.registered("B") }, false, base},
		{"the same leader after a stall", func(a *ackWait) bool { a.stalled("A"); return a.registered("A") }, true, 2 * base},
		{"a registration without a stall", func(a *ackWait) bool { return a.registered("A") }, false, 2 * base},
		{"again the same leader", func(a *ackWait) bool { a.stalled("A"); return a.registered("A") }, true, 4 * base},
		{"a short healthy run", func(a *ackWait) bool { a.healthy(ackRecoverAfter / 2); return false }, false, 4 * base},
		{"a long healthy run", func(a *ackWait) bool { a.healthy(ackRecoverAfter); return false }, false, base},
	}
	a := newAckWait(base)
	for _, s := range steps {
		if grew := s.do(&a); grew != s.grew || a.current != s.current {
			t.Fatalf("%s: grew %v, bound %v; want %v, %v", s.name, grew, a.current, s.grew, s.current)
		}
	}
	for range 10 {
		a.stalled("A")
		a.registered("A")
	}
	if a.current != maxAckBackoff*base {
		t.Fatalf("after many stalls of one leader the bound is %v, want %v", a.current, maxAckBackoff*base)
	}
}

// A young silence is put to the other members every quarter of the base
// bound, so that an election that ends just after a probe is found within
// a quarter bound; a long one every base bound.
func TestReprobeEvery(t *testing.T) {
	t.Parallel()
	base := time.Second
	for _, tc := range []struct {
		quiet, want time.Duration
	}{
		{time.Second, 250 * time.Millisecond},
		{1300 * time.Millisecond, 250 * time.Millisecond},
		{2999 * time.Millisecond, 250 * time.Millisecond},
		{3 * time.Second, time.Second},
		{15 * time.Second, time.Second},
	} {
		if got := reprobeEvery(tc.quiet, base); got != tc.want {
			t.Errorf("reprobeEvery(%v, %v) = %v, want %v", tc.quiet, base, got, tc.want)
		}
	}
}
