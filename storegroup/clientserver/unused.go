package clientserver

import (
	"umstore/repository"
	"umstore/wire"
)

// recordUnused proposes, ahead of p's entry, the record of the numbers
// p's publisher says it skipped when it resumed (wire.Publish.UnusedFrom):
// the group then reports them as never published, not as a gap
// (repository.Unpublished). The record is advisory and its order with the
// Publish does not matter, so its answer is not waited for: a failed or
// refused one leaves the range reported as a gap, as before.
func (cs *Server) recordUnused(p *wire.Publish, conn *connState) {
	if p.UnusedFrom == 0 || p.UnusedTo < p.UnusedFrom || p.UnusedTo >= p.FirstSeq {
		return
	}
	cs.Proposer.Propose(repository.EncodeUnpublished(repository.Unpublished{
		Source: p.Source, Session: conn.sessions[p.Source], From: p.UnusedFrom, To: p.UnusedTo,
	}))
}

// wireRanges converts repository ranges for a reply; nil for none.
func wireRanges(rs []repository.Range) []wire.Range {
	var out []wire.Range
	for _, r := range rs {
		out = append(out, wire.Range{From: r.From, To: r.To})
	}
	return out
}
