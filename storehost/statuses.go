package storehost

import "umstore/storegroup"

// maxViewReads bounds Statuses' reads: each retry follows a catch-up turn
// handed on during the previous read, and a turn lasts at least one
// catch-up, so a second read almost always suffices.
const maxViewReads = 16

// Statuses reads every store's status as one view of the hosts' staged
// restarts: stores' statuses are read one after the other, and a turn
// handed on between two reads would show both the store that finished
// catching up and the one that started (two empty stores of a group
// catching up at once, which SPEC §4 rule 4 forbids and which never
// happened). The reads are repeated while the hosts' turn counts moved
// during them. The status page, /v1/status and the metrics read this.
func (hs Hosts) Statuses() []storegroup.Status {
	return oneView(hs.turns, func() []storegroup.Status {
		var out []storegroup.Status
		for _, s := range hs.Stores() {
			out = append(out, s.Status())
		}
		return out
	})
}

// turns sums the catch-up turns the hosts' admissions have given.
func (hs Hosts) turns() uint64 {
	var n uint64
	for _, h := range hs {
		if h.admission != nil {
			n += h.admission.Turns()
		}
	}
	return n
}

// oneView calls read until no turn was given while it ran, at most
// maxViewReads times.
func oneView(turns func() uint64, read func() []storegroup.Status) []storegroup.Status {
	for i := 1; ; i++ {
		before := turns()
		out := read()
		if turns() == before || i == maxViewReads {
			return out
		}
	}
}
