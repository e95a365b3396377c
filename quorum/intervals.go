package quorum

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Range is an inclusive range of sequence numbers, From..To. Sequence
// numbers start at 1 (0 means "none"), so a Range holds the numbers n with
// From <= n <= To and n >= 1. It is empty when From > To or To == 0; in
// particular the zero Range is empty, which is what Tracker returns when
// nothing became stable.
type Range struct{ From, To uint64 }

// Empty reports whether r holds no sequence number.
func (r Range) Empty() bool { return r.To == 0 || r.From > r.To }

// Len returns how many sequence numbers r holds, 0 when empty.
func (r Range) Len() uint64 {
	if r.Empty() {
		return 0
	}
	return r.To - max(r.From, 1) + 1
}

// Contains reports whether seq is a sequence number of r.
func (r Range) Contains(seq uint64) bool { return seq != 0 && r.From <= seq && seq <= r.To }

// String renders r as "From-To", or "empty" when it holds nothing.
func (r Range) String() string {
	if r.Empty() {
		return "empty"
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// intervalSet is a set of numbers kept as a sorted slice of ranges with
// From <= To that neither overlap nor touch (a.To+1 < b.From for consecutive
// a, b), so each maximal run of numbers is exactly one element. It treats
// 0 as an ordinary number; the Tracker never stores it.
type intervalSet []Range

// add inserts every number of r (which must have From <= To) and merges r with
// the ranges it overlaps or touches. It returns the merged range now holding
// r. Cost: a binary search plus moving the tail of the slice once.
func (s *intervalSet) add(r Range) Range {
	iv := *s
	// First range that overlaps r or ends right before it (To >= r.From-1).
	i := sort.Search(len(iv), func(k int) bool {
		return r.From == 0 || iv[k].To >= r.From-1
	})
	// First range at or after i that starts beyond r and does not touch it
	// (From > r.To+1); everything in [i, j) merges with r.
	j := i
	for j < len(iv) && (r.To == math.MaxUint64 || iv[j].From <= r.To+1) {
		j++
	}
	if i < j {
		r.From = min(r.From, iv[i].From)
		r.To = max(r.To, iv[j-1].To)
	}
	*s = slices.Replace(iv, i, j, r)
	return r
}

// find returns the range of s holding seq, if any.
func (s intervalSet) find(seq uint64) (Range, bool) {
	i := sort.Search(len(s), func(k int) bool { return s[k].To >= seq })
	if i < len(s) && s[i].From <= seq {
		return s[i], true
	}
	return Range{}, false
}

// contains reports whether seq is in s.
func (s intervalSet) contains(seq uint64) bool {
	_, ok := s.find(seq)
	return ok
}
