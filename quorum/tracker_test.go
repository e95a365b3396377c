package quorum

import (
	"fmt"
	"math"
	"testing"
)

// step is one call on a Tracker in a scenario, with the stable watermark
// expected after it. The runner derives the expected (newly, advanced)
// result from the previous and expected watermarks.
type step struct {
	op      string // "confirm", "on", "off" or "forget"
	group   int
	r       Range
	through uint64
	stable  uint64
}

func confirm(group int, from, to, stable uint64) step {
	return step{op: "confirm", group: group, r: Range{from, to}, stable: stable}
}
func on(group int, stable uint64) step  { return step{op: "on", group: group, stable: stable} }
func off(group int, stable uint64) step { return step{op: "off", group: group, stable: stable} }
func forget(through, stable uint64) step {
	return step{op: "forget", through: through, stable: stable}
}

func (s step) String() string {
	switch s.op {
	case "confirm":
		return fmt.Sprintf("confirm %d %v", s.group, s.r)
	case "forget":
		return fmt.Sprintf("forget %d", s.through)
	default:
		return fmt.Sprintf("%s %d", s.op, s.group)
	}
}

type scenario struct {
	name   string
	groups int
	base   uint64 // 0 means 1
	steps  []step
}

// runScenarios plays each scenario on a fresh tracker and checks the
// watermark and the returned newly-stable range after every step.
func runScenarios(t *testing.T, b Behavior, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			base := max(sc.base, 1)
			tr := NewTracker(b, sc.groups, base)
			if got := tr.Stable(); got != base-1 {
				t.Fatalf("new tracker: Stable() = %d, want %d", got, base-1)
			}
			for i, s := range sc.steps {
				prev := tr.Stable()
				var newly Range
				var advanced bool
				switch s.op {
				case "confirm":
					newly, advanced = tr.Confirm(s.group, s.r)
				case "on", "off":
					newly, advanced = tr.SetActive(s.group, s.op == "on")
				case "forget":
					tr.Forget(s.through)
					newly, advanced = Range{}, false
				default:
					t.Fatalf("bad op %q", s.op)
				}
				wantNewly, wantAdvanced := Range{}, false
				if s.stable > prev {
					wantNewly, wantAdvanced = Range{prev + 1, s.stable}, true
				}
				if got := tr.Stable(); got != s.stable {
					t.Fatalf("step %d (%v): Stable() = %d, want %d", i, s, got, s.stable)
				}
				if newly != wantNewly || advanced != wantAdvanced {
					t.Fatalf("step %d (%v): returned %v, %v; want %v, %v", i, s, newly, advanced, wantNewly, wantAdvanced)
				}
			}
		})
	}
}

func TestTrackerAny(t *testing.T) {
	runScenarios(t, Any, []scenario{
		{name: "in order", groups: 1, steps: []step{
			confirm(0, 1, 5, 5),
			confirm(0, 6, 10, 10),
		}},
		{name: "out of order", groups: 1, steps: []step{
			confirm(0, 6, 10, 0),
			confirm(0, 11, 12, 0),
			confirm(0, 1, 5, 12),
		}},
		{name: "gap closed by another group", groups: 2, steps: []step{
			confirm(0, 1, 3, 3),
			confirm(0, 5, 8, 3),
			confirm(1, 4, 4, 8),
		}},
		{name: "groups cover different parts", groups: 2, steps: []step{
			confirm(0, 1, 5, 5),
			confirm(1, 6, 10, 10),
		}},
		{name: "chain of groups, reversed", groups: 3, steps: []step{
			confirm(2, 5, 6, 0),
			confirm(1, 3, 4, 0),
			confirm(0, 1, 2, 6),
		}},
		{name: "overlapping and duplicates", groups: 2, steps: []step{
			confirm(0, 1, 5, 5),
			confirm(1, 3, 9, 9),
			confirm(0, 4, 12, 12),
			confirm(0, 1, 5, 12),
			confirm(1, 1, 12, 12),
		}},
		{name: "base above 1", groups: 2, base: 100, steps: []step{
			confirm(0, 1, 99, 99),
			confirm(1, 101, 110, 99),
			confirm(0, 50, 100, 110),
		}},
		{name: "inactive groups still count", groups: 2, steps: []step{
			off(0, 0),
			off(1, 0),
			confirm(0, 1, 5, 5),
			on(1, 5),
		}},
		{name: "empty range ignored", groups: 1, steps: []step{
			confirm(0, 5, 4, 0),
			confirm(0, 1, 1, 1),
		}},
		{name: "forget keeps W", groups: 2, steps: []step{
			confirm(0, 1, 10, 10),
			forget(5, 10),
			forget(100, 10),
			confirm(1, 11, 12, 12),
		}},
	})
}

func TestTrackerMajority(t *testing.T) {
	runScenarios(t, Majority, []scenario{
		{name: "one group", groups: 1, steps: []step{
			confirm(0, 1, 5, 5),
		}},
		{name: "two groups need both", groups: 2, steps: []step{
			confirm(0, 1, 10, 0),
			confirm(1, 1, 5, 5),
			confirm(1, 6, 20, 10),
			confirm(0, 11, 15, 15),
		}},
		{name: "three groups need two", groups: 3, steps: []step{
			confirm(0, 1, 10, 0),
			confirm(2, 5, 8, 0),
			// 1-6 held by 0 and 1, 7-8 by 0 and 2, 9-10 by 0 only.
			confirm(1, 1, 6, 8),
			confirm(1, 9, 9, 9),
		}},
		{name: "three groups, activity ignored", groups: 3, steps: []step{
			off(0, 0),
			off(1, 0),
			confirm(0, 1, 10, 0),
			confirm(1, 1, 9, 9),
			confirm(2, 9, 12, 10),
		}},
		{name: "four groups need three", groups: 4, steps: []step{
			confirm(0, 1, 10, 0),
			confirm(1, 1, 10, 0),
			confirm(3, 3, 7, 0),
			// 1-2 held by 0, 1 and 2; 3-7 by 0, 1 and 3; 8-10 by 0 and 1.
			confirm(2, 1, 2, 7),
			confirm(3, 1, 2, 7),
			confirm(2, 8, 10, 10),
		}},
		{name: "out of order and base above 1", groups: 3, base: 50, steps: []step{
			confirm(0, 60, 70, 49),
			confirm(1, 55, 65, 49),
			confirm(0, 40, 59, 49),
			confirm(1, 50, 54, 65),
			confirm(2, 66, 80, 70),
		}},
	})
}

func TestTrackerAllActive(t *testing.T) {
	runScenarios(t, AllActive, []scenario{
		{name: "lagging group deactivated then back", groups: 3, steps: []step{
			confirm(0, 1, 10, 0),
			confirm(1, 1, 8, 0),
			confirm(2, 1, 5, 5),
			off(2, 8),
			confirm(2, 6, 20, 8), // inactive: recorded, does not count
			on(2, 8),
			confirm(1, 9, 30, 10),
			off(0, 20),
		}},
		{name: "no active group, nothing stable", groups: 2, steps: []step{
			off(0, 0),
			off(1, 0),
			confirm(0, 1, 5, 0),
			confirm(1, 1, 5, 0),
			on(0, 5),
		}},
		{name: "lone active group", groups: 2, steps: []step{
			off(1, 0),
			confirm(0, 1, 5, 5),
			confirm(1, 1, 9, 5),
		}},
		{name: "activating a lagging group does not retract", groups: 2, steps: []step{
			off(1, 0),
			confirm(0, 1, 10, 10),
			on(1, 10),
			confirm(0, 11, 20, 10),
			confirm(1, 11, 15, 15), // 1-10 need not be re-confirmed by group 1
		}},
		{name: "repeated SetActive is a no-op", groups: 2, steps: []step{
			confirm(0, 1, 4, 0),
			on(1, 0),
			off(1, 4),
			off(1, 4),
			on(1, 4),
		}},
		{name: "groups cover different parts", groups: 2, steps: []step{
			confirm(0, 1, 5, 0),
			confirm(1, 6, 10, 0),
			off(1, 5),
			on(1, 5),
			off(0, 10),
		}},
		{name: "base above 1", groups: 2, base: 10, steps: []step{
			confirm(0, 1, 20, 9),
			confirm(1, 5, 15, 15),
		}},
	})
}

func TestTrackerAll(t *testing.T) {
	runScenarios(t, All, []scenario{
		{name: "one group", groups: 1, steps: []step{
			confirm(0, 3, 5, 0),
			confirm(0, 1, 2, 5),
		}},
		{name: "inactive group still needed", groups: 3, steps: []step{
			confirm(0, 1, 10, 0),
			confirm(1, 1, 10, 0),
			off(2, 0),
			confirm(2, 1, 4, 4),
			confirm(2, 7, 12, 4),
			confirm(2, 5, 6, 10),
		}},
		{name: "overlapping out of order", groups: 2, steps: []step{
			confirm(1, 5, 9, 0),
			confirm(0, 2, 6, 0),
			confirm(1, 1, 3, 0),
			confirm(0, 1, 1, 3), // group 1 lacks 4
			confirm(0, 4, 9, 3),
			confirm(1, 4, 4, 9),
		}},
	})
}

func TestNewTracker(t *testing.T) {
	tr := NewTracker(Majority, 3, 0)
	if tr.Stable() != 0 || tr.Confirmed(0) != 0 || tr.Behavior() != Majority || tr.Groups() != 3 {
		t.Errorf("base 0: Stable %d Confirmed %d Behavior %v Groups %d", tr.Stable(), tr.Confirmed(0), tr.Behavior(), tr.Groups())
	}
	if tr.Has(0, 0) {
		t.Error("sequence 0 counted as confirmed")
	}
	if _, ok := tr.Confirm(0, Range{0, 0}); ok || tr.Has(0, 0) {
		t.Error("confirming sequence 0 had an effect")
	}
	for g := 0; g < 3; g++ {
		if !tr.Active(g) {
			t.Errorf("group %d does not start active", g)
		}
	}
	for _, bad := range []struct {
		b      Behavior
		groups int
	}{{Any, 0}, {Any, -1}, {Behavior(4), 1}, {Behavior(-1), 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewTracker(%v, %d, 1) did not panic", bad.b, bad.groups)
				}
			}()
			NewTracker(bad.b, bad.groups, 1)
		}()
	}
}

// TestInvalidGroup checks that bad group indexes are ignored without
// panicking and without touching the state.
func TestInvalidGroup(t *testing.T) {
	for _, b := range []Behavior{Any, Majority, AllActive, All} {
		tr := NewTracker(b, 2, 5)
		tr.Confirm(0, Range{5, 9})
		tr.Confirm(1, Range{5, 7})
		before := tr.Stable()
		for _, g := range []int{-1, 2, math.MaxInt, math.MinInt} {
			if r, ok := tr.Confirm(g, Range{1, 100}); ok || r != (Range{}) {
				t.Errorf("%v: Confirm(%d) = %v, %v", b, g, r, ok)
			}
			if r, ok := tr.SetActive(g, false); ok || r != (Range{}) {
				t.Errorf("%v: SetActive(%d, false) = %v, %v", b, g, r, ok)
			}
			if r, ok := tr.SetActive(g, true); ok || r != (Range{}) {
				t.Errorf("%v: SetActive(%d, true) = %v, %v", b, g, r, ok)
			}
			if tr.Active(g) || tr.Has(g, 6) || tr.Confirmed(g) != 4 {
				t.Errorf("%v: group %d: Active %v Has %v Confirmed %d", b, g, tr.Active(g), tr.Has(g, 6), tr.Confirmed(g))
			}
		}
		if tr.Stable() != before || !tr.ConfirmedByAllActive(7) || tr.ConfirmedByAllActive(8) {
			t.Errorf("%v: state changed by invalid groups: Stable %d (was %d)", b, tr.Stable(), before)
		}
	}
}

func TestConfirmedAndHas(t *testing.T) {
	tr := NewTracker(Any, 3, 10)
	tr.Confirm(0, Range{1, 12})  // 10-12
	tr.Confirm(0, Range{14, 20}) // gap at 13
	tr.Confirm(1, Range{11, 30}) // never confirmed 10
	tests := []struct {
		group     int
		confirmed uint64
		has       []uint64
		hasNot    []uint64
	}{
		{0, 12, []uint64{10, 12, 14, 20}, []uint64{1, 9, 13, 21}},
		{1, 9, []uint64{11, 30}, []uint64{9, 10, 31}},
		{2, 9, nil, []uint64{9, 10, 11}},
	}
	for _, tc := range tests {
		if got := tr.Confirmed(tc.group); got != tc.confirmed {
			t.Errorf("Confirmed(%d) = %d, want %d", tc.group, got, tc.confirmed)
		}
		for _, s := range tc.has {
			if !tr.Has(tc.group, s) {
				t.Errorf("Has(%d, %d) = false", tc.group, s)
			}
		}
		for _, s := range tc.hasNot {
			if tr.Has(tc.group, s) {
				t.Errorf("Has(%d, %d) = true", tc.group, s)
			}
		}
	}
	tr.Confirm(2, Range{13, 13})
	tr.Confirm(0, Range{13, 13})
	if got := tr.Confirmed(0); got != 20 {
		t.Errorf("after filling the gap Confirmed(0) = %d, want 20", got)
	}
	if got := tr.Stable(); got != 30 {
		t.Errorf("Stable() = %d, want 30", got)
	}
}

func TestConfirmedByAllActive(t *testing.T) {
	// The answer ignores the tracker's behaviour; use All to show W is not
	// what is being asked.
	tr := NewTracker(All, 3, 1)
	tr.Confirm(0, Range{1, 10})
	tr.Confirm(1, Range{3, 8})
	type check struct {
		seq  uint64
		want bool
	}
	expect := func(label string, checks ...check) {
		t.Helper()
		for _, c := range checks {
			if got := tr.ConfirmedByAllActive(c.seq); got != c.want {
				t.Errorf("%s: ConfirmedByAllActive(%d) = %v, want %v", label, c.seq, got, c.want)
			}
		}
	}
	expect("all active", check{5, false}, check{0, false})
	tr.SetActive(2, false)
	expect("2 inactive", check{2, false}, check{3, true}, check{8, true}, check{9, false})
	tr.SetActive(1, false)
	expect("only 0 active", check{1, true}, check{10, true}, check{11, false}, check{0, false})
	tr.SetActive(0, false)
	expect("none active", check{1, false}, check{5, false})
	tr.SetActive(2, true)
	expect("only 2 active", check{5, false})
	tr.Confirm(2, Range{5, 5})
	expect("only 2 active, confirmed 5", check{5, true}, check{4, false})
}

func TestForget(t *testing.T) {
	tr := NewTracker(Majority, 3, 1)
	tr.Confirm(0, Range{1, 20})
	tr.Confirm(1, Range{1, 4})
	tr.Confirm(1, Range{7, 15}) // gap 5-6
	tr.Confirm(2, Range{3, 3})
	tr.Confirm(2, Range{5, 6})
	tr.Confirm(2, Range{9, 9})
	tr.Confirm(2, Range{12, 25})
	if got := tr.Stable(); got != 20 {
		t.Fatalf("Stable() = %d, want 20", got)
	}
	tr.Forget(10)
	if got := tr.Stable(); got != 20 {
		t.Errorf("after Forget(10): Stable() = %d, want 20", got)
	}
	// Settled numbers read as confirmed by everyone.
	for g := 0; g < 3; g++ {
		for s := uint64(1); s <= 10; s++ {
			if !tr.Has(g, s) {
				t.Errorf("after Forget(10): Has(%d, %d) = false", g, s)
			}
		}
	}
	if !tr.ConfirmedByAllActive(10) {
		t.Error("after Forget(10): ConfirmedByAllActive(10) = false")
	}
	// Numbers above 10 answer as before.
	wantConfirmed := []uint64{20, 15, 10}
	for g, want := range wantConfirmed {
		if got := tr.Confirmed(g); got != want {
			t.Errorf("after Forget(10): Confirmed(%d) = %d, want %d", g, got, want)
		}
	}
	for _, c := range []struct {
		g   int
		s   uint64
		has bool
	}{{1, 15, true}, {1, 16, false}, {2, 11, false}, {2, 12, true}, {2, 25, true}, {0, 21, false}} {
		if got := tr.Has(c.g, c.s); got != c.has {
			t.Errorf("after Forget(10): Has(%d, %d) = %v, want %v", c.g, c.s, got, c.has)
		}
	}
	// Bookkeeping collapsed to one range below the forgotten mark.
	for g := range tr.groups {
		if iv := tr.groups[g].confirmed; len(iv) == 0 || iv[0].From != 1 || iv[0].To < 10 || len(iv) > 2 {
			t.Errorf("group %d keeps %v after Forget(10)", g, iv)
		}
	}
	// Forget beyond W is capped at W: 21-25 are held by group 2 only and
	// must not become stable.
	tr.Forget(100)
	if got := tr.Stable(); got != 20 {
		t.Errorf("after Forget(100): Stable() = %d, want 20", got)
	}
	if tr.Has(1, 21) || tr.Confirmed(1) != 20 {
		t.Errorf("after Forget(100): Has(1, 21) = %v, Confirmed(1) = %d; want false, 20", tr.Has(1, 21), tr.Confirmed(1))
	}
	if newly, ok := tr.Confirm(1, Range{21, 22}); !ok || newly != (Range{21, 22}) {
		t.Errorf("Confirm after Forget = %v, %v; want 21-22, true", newly, ok)
	}
	// Forgetting below base or with nothing stable does nothing.
	tr2 := NewTracker(Any, 2, 5)
	tr2.Confirm(0, Range{6, 9})
	tr2.Forget(8)
	if tr2.Has(1, 6) || tr2.Has(0, 5) || tr2.Stable() != 4 {
		t.Errorf("Forget with nothing stable changed answers")
	}
}

// TestSequenceSpaceTop checks that confirming up to math.MaxUint64 neither
// overflows nor loops.
func TestSequenceSpaceTop(t *testing.T) {
	const top = math.MaxUint64
	for _, b := range []Behavior{Any, Majority, AllActive, All} {
		tr := NewTracker(b, 2, top-9)
		var total uint64
		for _, c := range []struct {
			g int
			r Range
		}{{0, Range{top - 4, top}}, {1, Range{0, top}}, {0, Range{top - 9, top - 5}}} {
			newly, _ := tr.Confirm(c.g, c.r)
			total += newly.Len()
		}
		if tr.Stable() != top || total != 10 {
			t.Errorf("%v: Stable %d, %d numbers reported newly stable; want %d, 10", b, tr.Stable(), total, uint64(top))
		}
		if _, ok := tr.Confirm(0, Range{top, top}); ok {
			t.Errorf("%v: advanced past the top", b)
		}
		if _, ok := tr.SetActive(1, false); ok {
			t.Errorf("%v: SetActive advanced past the top", b)
		}
		tr.Forget(top)
		if tr.Confirmed(1) != top || tr.Stable() != top {
			t.Errorf("%v: after Forget(top): Confirmed(1) %d Stable %d", b, tr.Confirmed(1), tr.Stable())
		}
	}
}
