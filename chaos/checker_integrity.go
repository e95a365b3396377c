package main

import (
	"fmt"
	"strings"
)

// checkIntegrity is the rule of damaged files: no receiver (the follower,
// the durable receiver, or the final read-back) is ever given a payload
// other than the one its publisher sent for that sequence number. Every
// payload a chaos publisher sends verifies itself (makePayload: source,
// sequence number, incarnation and a checksum of them and of its length),
// so a damaged or misplaced payload is caught whether or not it was ever
// acknowledged; a payload that is intact but differs from the acknowledged
// one is a reused sequence number, which checkPayloads reports (rule 2).
// The stranger's payloads are checkStranger's.
func checkIntegrity(h *History, add addFunc) {
	for _, src := range h.Sources {
		var bad []string
		n := 0
		for _, d := range h.Deliveries[src] {
			if d.Damage != "" && !strings.HasPrefix(d.Damage, damageStranger) {
				n++
				if len(bad) < maxExamples {
					bad = append(bad, fmt.Sprintf("seq %d (%s)", d.Seq, d.Damage))
				}
			}
		}
		if n > 0 {
			add("integrity", "source %s: the follower was handed %d payloads that are not what the publisher sent, e.g. %s", src, n, strings.Join(bad, ", "))
		}
		bad, n = nil, 0
		for _, d := range h.Durable[src] {
			for _, x := range d.Handed {
				if x.Damage != "" && !strings.HasPrefix(x.Damage, damageStranger) {
					n++
					if len(bad) < maxExamples {
						bad = append(bad, fmt.Sprintf("seq %d to incarnation %d (%s)", x.Seq, d.Incarnation, x.Damage))
					}
				}
			}
		}
		if n > 0 {
			add("integrity", "source %s: the durable receiver was handed %d payloads that are not what the publisher sent, e.g. %s", src, n, strings.Join(bad, ", "))
		}
		f := h.Final[src]
		if f == nil {
			continue
		}
		var seqs []uint64
		for _, seq := range sortedSeqs(f.Damaged) {
			if !strings.HasPrefix(f.Damaged[seq], damageStranger) {
				seqs = append(seqs, seq)
			}
		}
		if len(seqs) > 0 {
			var ex []string
			for _, seq := range seqs[:min(len(seqs), maxExamples)] {
				ex = append(ex, fmt.Sprintf("seq %d (%s)", seq, f.Damaged[seq]))
			}
			add("integrity", "source %s: the final read was given %d payloads that are not what the publisher sent (%s), e.g. %s", src, len(seqs), rangesString(toRanges(seqs)), strings.Join(ex, ", "))
		}
	}
}
