package main

import (
	"slices"
	"strings"
)

// checkUnpublished: a publisher declares never published only numbers no
// incarnation was told were stable. The receivers pass over a declared
// range without a word (the receiver and durable rules accept that), so
// an acknowledged message inside one would be skipped unnoticed; rule 1
// still requires it to be read back.
func checkUnpublished(h *History, acks map[string]map[uint64]string, add addFunc) {
	for _, u := range h.Unpublished {
		var inside []uint64
		for seq := range acks[u.Source] {
			if seq >= u.From && seq <= u.To {
				inside = append(inside, seq)
			}
		}
		if len(inside) == 0 {
			continue
		}
		slices.Sort(inside)
		add("unpublished", "source %s: incarnation %d of its publisher declared %d-%d never published at %s, but %d of them had been acknowledged: %s",
			u.Source, u.Incarnation, u.From, u.To, u.At.Format("15:04:05.000"), len(inside), strings.TrimSpace(rangesString(toRanges(inside))))
	}
}
