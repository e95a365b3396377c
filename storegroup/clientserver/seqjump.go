package clientserver

import (
	"fmt"

	"umstore/wire"
)

// How far a Publish may jump. Sequence numbers end at wire.MaxSeq, and a
// source's highest never goes down, so one message at the ceiling would use
// the source up for good: its publisher's next registration resumes past
// it and fails (publisher.ErrSequenceExhausted). A publisher never needs to
// jump far. Its messages follow one another; resent after a reconnect they
// start at or below what the group holds; a restarted publisher resumes at
// one past the highest any group holds, or, when a group did not answer,
// past its state file's reservation, a few thousand numbers ahead of what
// it sent. So a Publish is refused (CodeBadRequest, nothing proposed) when
// it would open a gap of more than Limits.MaxSeqJump numbers past the
// highest sequence number this store knows the deployment holds for the
// source: its own group's, what this connection proposed, and what the
// other groups held when the leader's repair last compared them (PeerHigh).
// A group that lagged far behind the others (down while they took many
// messages) refuses a restarted publisher's first frames until its next
// repair pass has seen the others, and takes them then: the publisher
// sends them again after the refusal. The check is the leader's, before
// it proposes: apply is unchanged, and replays old logs as before.

// checkJump returns the Error refusing p when it opens too large a gap past
// the highest sequence number of its source the store knows of; nil
// otherwise, and for a source conn did not register (the registration
// check refuses it then). A frame continuing what conn proposed is let
// through without a read.
func (cs *Server) checkJump(p *wire.Publish, conn *connState) *wire.Error {
	if _, ok := conn.sessions[p.Source]; !ok {
		return nil
	}
	high := conn.published[p.Source]
	if p.FirstSeq <= high+1 {
		return nil
	}
	if info, ok, err := cs.Repo.Source(p.Source); err == nil && ok {
		high = max(high, info.HighSeq)
	}
	if cs.PeerHigh != nil {
		high = max(high, cs.PeerHigh(p.Source))
	}
	if p.FirstSeq <= high+1 {
		return nil // a resend, or the next numbers
	}
	if gap := p.FirstSeq - high - 1; gap > cs.Limits.MaxSeqJump {
		return &wire.Error{ReqID: p.ReqID, Code: wire.CodeBadRequest, Message: fmt.Sprintf(
			"a Publish of source %q from sequence number %d would skip %d numbers past %d, the highest this store knows any group holds; a store takes a gap of at most %d (MaxSeqJump), so that no client can use a source up: nothing was stored. Publish from %d on; a group that lags learns how far the others hold within its repair interval, so send it again then",
			p.Source, p.FirstSeq, gap, high, cs.Limits.MaxSeqJump, high+1)}
	}
	return nil
}

// proposedThrough records that conn proposes n messages of source from
// first.
func (conn *connState) proposedThrough(source string, first uint64, n int) {
	if conn.published == nil {
		conn.published = map[string]uint64{}
	}
	conn.published[source] = max(conn.published[source], first+uint64(n)-1)
}
