package quorum

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

func TestRange(t *testing.T) {
	tests := []struct {
		r     Range
		empty bool
		n     uint64
		str   string
	}{
		{Range{1, 5}, false, 5, "1-5"},
		{Range{7, 7}, false, 1, "7-7"},
		{Range{8, 7}, true, 0, "empty"},
		{Range{}, true, 0, "empty"},
		{Range{0, 5}, false, 5, "0-5"},
		{Range{0, math.MaxUint64}, false, math.MaxUint64, "0-18446744073709551615"},
		{Range{1, math.MaxUint64}, false, math.MaxUint64, "1-18446744073709551615"},
	}
	for _, tc := range tests {
		if got := tc.r.Empty(); got != tc.empty {
			t.Errorf("%v.Empty() = %v", tc.r, got)
		}
		if got := tc.r.Len(); got != tc.n {
			t.Errorf("%v.Len() = %d, want %d", tc.r, got, tc.n)
		}
		if got := tc.r.String(); got != tc.str {
			t.Errorf("String() = %q, want %q", got, tc.str)
		}
	}
	r := Range{3, 6}
	for seq, want := range map[uint64]bool{2: false, 3: true, 5: true, 6: true, 7: false} {
		if got := r.Contains(seq); got != want {
			t.Errorf("%v.Contains(%d) = %v", r, seq, got)
		}
	}
	if (Range{5, 4}).Contains(4) || (Range{5, 4}).Contains(5) || (Range{}).Contains(0) || (Range{0, 5}).Contains(0) {
		t.Error("an empty range, or a range holding 0, contains a number it must not")
	}
}

func TestIntervalSetAdd(t *testing.T) {
	top := uint64(math.MaxUint64)
	tests := []struct {
		name   string
		adds   []Range
		want   intervalSet
		merged Range // what the last add returns
	}{
		{"single", []Range{{3, 5}}, intervalSet{{3, 5}}, Range{3, 5}},
		{"disjoint in order", []Range{{1, 2}, {5, 6}}, intervalSet{{1, 2}, {5, 6}}, Range{5, 6}},
		{"disjoint reversed", []Range{{5, 6}, {1, 2}}, intervalSet{{1, 2}, {5, 6}}, Range{1, 2}},
		{"touch right", []Range{{1, 2}, {3, 4}}, intervalSet{{1, 4}}, Range{1, 4}},
		{"touch left", []Range{{3, 4}, {1, 2}}, intervalSet{{1, 4}}, Range{1, 4}},
		{"overlap", []Range{{1, 5}, {4, 9}}, intervalSet{{1, 9}}, Range{1, 9}},
		{"inside", []Range{{1, 9}, {3, 4}}, intervalSet{{1, 9}}, Range{1, 9}},
		{"duplicate", []Range{{1, 9}, {1, 9}}, intervalSet{{1, 9}}, Range{1, 9}},
		{"fill gap", []Range{{1, 2}, {6, 7}, {3, 5}}, intervalSet{{1, 7}}, Range{1, 7}},
		{"swallow many", []Range{{2, 2}, {4, 4}, {6, 6}, {10, 11}, {1, 8}}, intervalSet{{1, 8}, {10, 11}}, Range{1, 8}},
		{"middle no touch", []Range{{1, 2}, {10, 11}, {5, 6}}, intervalSet{{1, 2}, {5, 6}, {10, 11}}, Range{5, 6}},
		{"zero", []Range{{1, 3}, {0, 0}}, intervalSet{{0, 3}}, Range{0, 3}},
		{"top", []Range{{top - 1, top}, {top - 3, top - 2}}, intervalSet{{top - 3, top}}, Range{top - 3, top}},
		{"everything", []Range{{5, 6}, {0, top}}, intervalSet{{0, top}}, Range{0, top}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s intervalSet
			var merged Range
			for _, r := range tc.adds {
				merged = s.add(r)
			}
			if !slices.Equal(s, tc.want) {
				t.Errorf("set = %v, want %v", s, tc.want)
			}
			if merged != tc.merged {
				t.Errorf("last add returned %v, want %v", merged, tc.merged)
			}
		})
	}
}

// TestIntervalSetRandom checks add, find and the set's invariants against a
// plain map of numbers.
func TestIntervalSetRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		var s intervalSet
		ref := map[uint64]bool{}
		for op := 0; op < 30; op++ {
			from := uint64(rng.Intn(100))
			r := Range{from, from + uint64(rng.Intn(8))}
			merged := s.add(r)
			for x := r.From; x <= r.To; x++ {
				ref[x] = true
			}
			if !(merged.From <= r.From && r.To <= merged.To) {
				t.Fatalf("add(%v) returned %v, which does not hold it", r, merged)
			}
			for i, iv := range s {
				if iv.From > iv.To || (i > 0 && s[i-1].To+1 >= iv.From) {
					t.Fatalf("set %v is not sorted, merged and non-empty at %d", s, i)
				}
			}
			for x := uint64(0); x < 110; x++ {
				got, ok := s.find(x)
				if ok != ref[x] || (ok && (x < got.From || x > got.To)) {
					t.Fatalf("after adding %v: find(%d) = %v, %v; want found=%v (set %v)", r, x, got, ok, ref[x], s)
				}
				if ok && (ref[got.From-1] && got.From > 0 || ref[got.To+1]) {
					t.Fatalf("find(%d) = %v is not a maximal run (set %v)", x, got, s)
				}
			}
		}
	}
}
