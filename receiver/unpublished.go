package receiver

import (
	"slices"
	"sync"

	"umstore/wire"
)

// A publisher that resumed past numbers it never sent declares them to
// the groups, which report them as never published (wire
// FetchReply.Unpublished, Deliver.Unpublished): a number there that no
// reachable group holds is neither delivered nor reported, by Read or by
// Follow. It was never published; nothing was lost.

// maxUnpublishedKept bounds the ranges a receiver remembers.
const maxUnpublishedKept = 256

// unpublishedSet is the union of the ranges the groups declared never
// published, as far as this receiver saw.
type unpublishedSet struct {
	mu     sync.Mutex
	ranges []Range // ascending, merged
}

func (u *unpublishedSet) see(rs []wire.Range) {
	if len(rs) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range rs {
		if r.From == 0 || r.To < r.From {
			continue
		}
		u.ranges = append(u.ranges, Range{From: r.From, To: r.To})
	}
	slices.SortFunc(u.ranges, func(a, b Range) int {
		switch {
		case a.From < b.From:
			return -1
		case a.From > b.From:
			return 1
		}
		return 0
	})
	out := u.ranges[:1]
	for _, r := range u.ranges[1:] {
		last := &out[len(out)-1]
		if r.From <= last.To+1 {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	if len(out) > maxUnpublishedKept {
		out = out[len(out)-maxUnpublishedKept:]
	}
	u.ranges = out
}

// without returns rs (ascending) less the unpublished ranges.
func (u *unpublishedSet) without(rs []Range) []Range {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.ranges) == 0 {
		return rs
	}
	var out []Range
	for _, r := range rs {
		cur, whole := r, true
		for _, x := range u.ranges {
			if x.To < cur.From || x.From > cur.To {
				continue
			}
			if x.From > cur.From {
				out = append(out, Range{From: cur.From, To: x.From - 1})
			}
			if x.To >= cur.To {
				whole = false
				break
			}
			cur.From = x.To + 1
		}
		if whole {
			out = append(out, cur)
		}
	}
	return out
}

// within returns the parts of r (ascending) that are unpublished: r less
// what without(r) leaves.
func (u *unpublishedSet) within(r Range) []Range {
	var out []Range
	next := r.From
	for _, kept := range u.without([]Range{r}) {
		if kept.From > next {
			out = append(out, Range{From: next, To: kept.From - 1})
		}
		next = kept.To + 1
	}
	if next <= r.To && next >= r.From {
		out = append(out, Range{From: next, To: r.To})
	}
	return out
}

// passedOver tells Config.OnUnpublished of the unpublished parts of rs, a
// read's holes or a Follow's skipped run.
func (r *Receiver) passedOver(rs []Range) {
	if r.cfg.OnUnpublished == nil {
		return
	}
	for _, h := range rs {
		for _, u := range r.unpublished.within(h) {
			r.cfg.OnUnpublished(u)
		}
	}
}
