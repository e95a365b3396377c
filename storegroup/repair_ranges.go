package storegroup

import (
	"math"
	"sort"

	"umstore/repository"
	"umstore/wire"
)

// seqRange is an inclusive range of sequence numbers.
type seqRange struct{ from, to uint64 }

// heldBy returns the ranges a group holds of a source: [low, high] minus
// its recorded gaps. A source the group does not know holds nothing.
func heldBy(low, high uint64, gaps []seqRange) []seqRange {
	if high == 0 || low == 0 || low > high {
		return nil
	}
	return subtract([]seqRange{{low, high}}, gaps)
}

// subtract returns a minus b; both sorted, a non-overlapping.
func subtract(a, b []seqRange) []seqRange {
	b = normalize(b)
	var out []seqRange
	for _, r := range a {
		cur := r
		ok := true
		for _, x := range b {
			if x.to < cur.from || x.from > cur.to {
				continue
			}
			if x.from > cur.from {
				out = append(out, seqRange{cur.from, x.from - 1})
			}
			if x.to >= cur.to {
				ok = false
				break
			}
			cur.from = x.to + 1
		}
		if ok {
			out = append(out, cur)
		}
	}
	return out
}

// normalize sorts and merges overlapping or adjacent ranges.
func normalize(rs []seqRange) []seqRange {
	if len(rs) == 0 {
		return nil
	}
	s := append([]seqRange(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].from < s[j].from })
	out := []seqRange{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r.from <= last.to+1 {
			last.to = max(last.to, r.to)
			continue
		}
		out = append(out, r)
	}
	return out
}

// missingRanges returns what another group holds of a source and this
// group does not: the ranges repair should copy. ours is nil when this group
// has never seen the source.
func missingRanges(ours *repository.SourceInfo, theirs wire.SourceState) []seqRange {
	var theirGaps []seqRange
	for _, g := range theirs.Gaps {
		theirGaps = append(theirGaps, seqRange{g.From, g.To})
	}
	theirHeld := heldBy(theirs.LowSeq, theirs.HighSeq, theirGaps)
	// Above the ceiling nothing is copied: apply would refuse it (a group
	// from before the ceiling may hold such messages).
	theirHeld = subtract(theirHeld, []seqRange{{wire.MaxSeq + 1, math.MaxUint64}})
	if ours == nil {
		return theirHeld
	}
	var ourGaps []seqRange
	for _, g := range ours.Gaps {
		ourGaps = append(ourGaps, seqRange{g.From, g.To})
	}
	ourHeld := heldBy(ours.LowSeq, ours.HighSeq, ourGaps)
	missing := subtract(theirHeld, ourHeld)
	if ours.TrimmedThrough > 0 {
		// Released by our retention: not missing, never to be copied back.
		missing = subtract(missing, []seqRange{{1, ours.TrimmedThrough}})
	}
	return missing
}
