package quorum

import "fmt"

// refTracker is a deliberately naive model of Tracker: one map entry per
// (sequence number, group), and stability decided one number at a time. It
// is slow and obviously right, which is its only job.
type refTracker struct {
	b      Behavior
	n      int
	base   uint64
	has    map[uint64]map[int]bool
	active []bool
	stable uint64
}

func newRef(b Behavior, groups int, base uint64) *refTracker {
	r := &refTracker{b: b, n: groups, base: base, has: map[uint64]map[int]bool{}, active: make([]bool, groups), stable: base - 1}
	for g := range r.active {
		r.active[g] = true
	}
	return r
}

func (r *refTracker) mark(group int, seq uint64) {
	if r.has[seq] == nil {
		r.has[seq] = map[int]bool{}
	}
	r.has[seq][group] = true
}

func (r *refTracker) confirm(group int, from, to uint64) {
	for s := max(from, r.base); s <= to; s++ {
		r.mark(group, s)
	}
	r.recompute()
}

func (r *refTracker) setActive(group int, active bool) {
	r.active[group] = active
	r.recompute()
}

// forget settles every number up to min(through, stable) for every group.
func (r *refTracker) forget(through uint64) {
	for s := r.base; s <= min(through, r.stable); s++ {
		for g := 0; g < r.n; g++ {
			r.mark(g, s)
		}
	}
}

func (r *refTracker) isStable(seq uint64) bool {
	count, nActive, activeCount := 0, 0, 0
	for g := 0; g < r.n; g++ {
		h := r.has[seq][g]
		if h {
			count++
		}
		if r.active[g] {
			nActive++
			if h {
				activeCount++
			}
		}
	}
	switch r.b {
	case Any:
		return count >= 1
	case Majority:
		return count >= r.n/2+1
	case AllActive:
		return nActive > 0 && activeCount == nActive
	case All:
		return count == r.n
	}
	panic("bad behaviour")
}

func (r *refTracker) recompute() {
	for r.isStable(r.stable + 1) {
		r.stable++
	}
}

func (r *refTracker) confirmed(group int) uint64 {
	s := r.base
	for r.has[s][group] {
		s++
	}
	return s - 1
}

func (r *refTracker) allActive(seq uint64) bool {
	some := false
	for g := 0; g < r.n; g++ {
		if r.active[g] {
			some = true
			if !r.has[seq][g] {
				return false
			}
		}
	}
	return some
}

// diff compares every observable answer of tr with the model for sequence
// numbers 0..limit and returns the first mismatch, or "".
func (r *refTracker) diff(tr *Tracker, limit uint64) string {
	if got := tr.Stable(); got != r.stable {
		return fmt.Sprintf("Stable() = %d, want %d", got, r.stable)
	}
	for g := 0; g < r.n; g++ {
		if got := tr.Confirmed(g); got != r.confirmed(g) {
			return fmt.Sprintf("Confirmed(%d) = %d, want %d", g, got, r.confirmed(g))
		}
		if got := tr.Active(g); got != r.active[g] {
			return fmt.Sprintf("Active(%d) = %v, want %v", g, got, r.active[g])
		}
		for s := uint64(0); s <= limit; s++ {
			if got := tr.Has(g, s); got != r.has[s][g] {
				return fmt.Sprintf("Has(%d, %d) = %v, want %v", g, s, got, r.has[s][g])
			}
		}
	}
	for s := uint64(0); s <= limit; s++ {
		if got := tr.ConfirmedByAllActive(s); got != r.allActive(s) {
			return fmt.Sprintf("ConfirmedByAllActive(%d) = %v, want %v", s, got, r.allActive(s))
		}
	}
	return ""
}

// checkStep compares what one call returned with how the model's watermark
// moved from prev.
func checkStep(newly Range, advanced bool, prev, now uint64) string {
	want, wantAdv := Range{}, false
	if now > prev {
		want, wantAdv = Range{prev + 1, now}, true
	}
	if newly != want || advanced != wantAdv {
		return fmt.Sprintf("returned %v, %v; want %v, %v", newly, advanced, want, wantAdv)
	}
	return ""
}
