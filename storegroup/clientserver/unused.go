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
	if p.UnusedTo >= p.FirstSeq {
		return
	}
	cs.proposeUnused(p.Source, conn.sessions[p.Source], p.UnusedFrom, p.UnusedTo)
}

// recordUnusedKept is recordUnused for a KeepAlive's range (a publisher
// with nothing more to send), from the session that holds its source on
// this connection (keepAlive checked it).
func (cs *Server) recordUnusedKept(m *wire.KeepAlive) {
	cs.proposeUnused(m.Source, m.Session, m.UnusedFrom, m.UnusedTo)
}

// proposeUnused proposes the record of session's skipped numbers from..to
// of source, if from..to is a range. The repository records it only while
// session holds the source, and reports as never published only the
// numbers the group does not hold. Below the format level that adds the
// record (a member still runs a binary without it) the proposer withholds
// it until the leader raises the level (storegroup/levels.go).
func (cs *Server) proposeUnused(source, session string, from, to uint64) {
	if from == 0 || to < from {
		return
	}
	cs.Proposer.Advise(repository.EncodeUnpublished(repository.Unpublished{Source: source, Session: session, From: from, To: to}))
}

// wireRanges converts repository ranges for a reply; nil for none.
func wireRanges(rs []repository.Range) []wire.Range {
	var out []wire.Range
	for _, r := range rs {
		out = append(out, wire.Range{From: r.From, To: r.To})
	}
	return out
}
