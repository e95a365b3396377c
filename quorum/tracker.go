package quorum

import (
	"fmt"
	"math"
	"slices"
)

// Tracker tracks which store groups confirmed which sequence numbers of one
// source and derives the in-order stable watermark from them under one
// intergroup Behavior.
//
// Groups are numbered 0..groups-1 and all start active. A group index
// outside that range is not an error the tracker can act on: every method
// given one ignores it and answers as for a group that confirmed nothing and
// is inactive (Confirm and SetActive return Range{}, false). It never
// panics.
//
// A Tracker is not safe for concurrent use.
type Tracker struct {
	behavior Behavior
	base     uint64 // first tracked sequence number, >= 1
	stable   uint64 // W: every number in [base, stable] is stable
	groups   []groupState
	nActive  int      // how many groups are active
	ends     []uint64 // scratch for advance, len(groups) capacity
}

// groupState is what the tracker knows about one group.
type groupState struct {
	confirmed intervalSet // numbers >= base the group confirmed
	active    bool
}

// NewTracker returns a tracker for groups store groups, all active, whose
// first sequence number is base. Stable starts at base-1: nothing is stable.
// A base of 0 is taken as 1, because 0 is not a sequence number. It panics
// if groups < 1 or b is not a defined Behavior: both are configuration
// errors that must be rejected before a tracker is built.
func NewTracker(b Behavior, groups int, base uint64) *Tracker {
	if groups < 1 {
		panic(fmt.Sprintf("quorum: NewTracker with %d groups, need at least 1", groups))
	}
	if b < Any || b > All {
		panic(fmt.Sprintf("quorum: NewTracker with undefined %s", b))
	}
	base = max(base, 1)
	t := &Tracker{
		behavior: b,
		base:     base,
		stable:   base - 1,
		groups:   make([]groupState, groups),
		nActive:  groups,
		ends:     make([]uint64, 0, groups),
	}
	for i := range t.groups {
		t.groups[i].active = true
	}
	return t
}

// Behavior returns the intergroup behaviour the tracker applies.
func (t *Tracker) Behavior() Behavior { return t.behavior }

// Groups returns the number of configured groups.
func (t *Tracker) Groups() int { return len(t.groups) }

// Stable returns the stable watermark W: every sequence number in
// [base, W] is stable. It is base-1 until base itself is stable and never
// decreases.
func (t *Tracker) Stable() uint64 { return t.stable }

// Confirm records that group committed every number of r. Ranges may
// arrive in any order, overlap, repeat, or reach below base (that part is
// ignored). If the confirmation moves the stable watermark, Confirm returns
// the newly stable numbers, (previous W)+1 .. (new W), and true; otherwise
// Range{} and false. Under AllActive a confirmation from an inactive group
// is recorded but cannot advance W until the group is active again.
func (t *Tracker) Confirm(group int, r Range) (newly Range, advanced bool) {
	if !t.valid(group) {
		return Range{}, false
	}
	r.From = max(r.From, t.base)
	if r.Empty() {
		return Range{}, false
	}
	merged := t.groups[group].confirmed.add(r)
	// Only a change in coverage at W+1 can move W.
	if t.stable == math.MaxUint64 || !merged.Contains(t.stable+1) {
		return Range{}, false
	}
	return t.advance()
}

// SetActive marks group as active (connected and registered) or not.
// Activity affects stability only under AllActive: there deactivating the
// group that lags behind may make more numbers stable, which are returned
// as by Confirm, and activating a group never takes back stability already
// reported. ConfirmedByAllActive looks at activity under every behaviour.
func (t *Tracker) SetActive(group int, active bool) (newly Range, advanced bool) {
	if !t.valid(group) {
		return Range{}, false
	}
	g := &t.groups[group]
	if g.active == active {
		return Range{}, false
	}
	g.active = active
	if active {
		t.nActive++
	} else {
		t.nActive--
	}
	if t.behavior != AllActive {
		return Range{}, false
	}
	return t.advance()
}

// Active reports whether group is currently marked active.
func (t *Tracker) Active(group int) bool {
	return t.valid(group) && t.groups[group].active
}

// Confirmed returns the group's contiguous watermark: the highest C such
// that the group confirmed every number in [base, C], or base-1 if it has
// not confirmed base. Useful to know where to resume sending to a group.
func (t *Tracker) Confirmed(group int) uint64 {
	if !t.valid(group) {
		return t.base - 1
	}
	iv := t.groups[group].confirmed
	if len(iv) > 0 && iv[0].From == t.base {
		return iv[0].To
	}
	return t.base - 1
}

// Has reports whether group confirmed seq. Numbers below base are never
// confirmed.
func (t *Tracker) Has(group int, seq uint64) bool {
	return t.valid(group) && t.groups[group].confirmed.contains(seq)
}

// ConfirmedByAllActive reports whether every active group confirmed seq,
// whatever the tracker's Behavior. A publisher uses it to decide when a
// retained message is no longer needed by any connected group. It is false
// when no group is active.
func (t *Tracker) ConfirmedByAllActive(seq uint64) bool {
	if t.nActive == 0 {
		return false
	}
	for i := range t.groups {
		g := &t.groups[i]
		if g.active && !g.confirmed.contains(seq) {
			return false
		}
	}
	return true
}

// Forget bounds memory by declaring the numbers up to through settled. It
// only acts on numbers that are already stable: through is capped at
// Stable(), so W and everything about numbers above the cap are unchanged.
// For the numbers it settles, the tracker drops what each group did or did
// not confirm and from then on answers as if every group had confirmed
// them: Has is true, ConfirmedByAllActive is true while some group is
// active, and Confirmed is at least the cap (a group that missed some of
// them will not be asked to resend them, since the publisher has let them
// go). After Forget a group's bookkeeping below the cap is one range.
func (t *Tracker) Forget(through uint64) {
	through = min(through, t.stable)
	if through < t.base {
		return
	}
	settled := Range{From: t.base, To: through}
	for i := range t.groups {
		t.groups[i].confirmed.add(settled)
	}
}

// valid reports whether group names a configured group.
func (t *Tracker) valid(group int) bool { return group >= 0 && group < len(t.groups) }

// need returns how many of the counted groups must hold a number for it to
// be stable (Behavior.Needed), and whether only active groups count. need is
// 0 when nothing can become stable (AllActive with no active group).
func (t *Tracker) need() (need int, activeOnly bool) {
	return t.behavior.Needed(len(t.groups), t.nActive), t.behavior == AllActive
}

// advance moves W as far as the confirmations allow and reports the numbers
// that became stable. From s = W+1 it asks each counted group how far its
// confirmed run holding s reaches; if at least need groups hold s, every
// number up to the need-th farthest end is held by need groups, so W jumps
// there. It repeats from the new W+1 until too few groups hold it.
func (t *Tracker) advance() (newly Range, advanced bool) {
	need, activeOnly := t.need()
	if need == 0 {
		return Range{}, false
	}
	prev := t.stable
	for t.stable != math.MaxUint64 {
		s := t.stable + 1
		ends := t.ends[:0]
		for i := range t.groups {
			g := &t.groups[i]
			if activeOnly && !g.active {
				continue
			}
			if r, ok := g.confirmed.find(s); ok {
				ends = append(ends, r.To)
			}
		}
		t.ends = ends
		if len(ends) < need {
			break
		}
		slices.Sort(ends)
		t.stable = ends[len(ends)-need]
	}
	if t.stable == prev {
		return Range{}, false
	}
	return Range{From: prev + 1, To: t.stable}, true
}
