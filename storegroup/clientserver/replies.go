package clientserver

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/storegroup/stagetime"
	"umstore/wire"
)

// reply is one answer owed to a client, in request order: either ready now
// or waiting for a proposal.
type reply struct {
	msg    wire.Message
	future raft.ApplyFuture
	req    wire.Message
	// release, if set, frees the proposal's slot in the connection's
	// window; the writer calls it once this reply is answered.
	release func()
	// hold, if set, is what a Publish answer waits for after the commit:
	// the members its intragroup behaviour names (intragroup.go).
	hold *memberHold
	// intragroup names the intragroup behaviour a registration gets, for
	// its Registered answer.
	intragroup string
	// read, for a Publish, is when its frame was read: the answer's
	// stagetime.Total starts there.
	read time.Time
}

// writeReplies answers in request order. On a write error it closes the
// connection, which ends the reader too. Answers are flushed whenever the
// writer has caught up, and before it waits for a proposal: an answer
// already written must not wait in the buffer for a later proposal to
// commit (at a steady rate there is always a later one).
func (cs *Server) writeReplies(c *wire.Conn, replies *replyQueue) {
	broken := false
	var waited raft.ApplyFuture // the last proposal waited for
	var decided time.Time       // when its answer came (stagetime.Answer starts there)
	for {
		r, ok := replies.get()
		if !ok {
			return
		}
		if broken {
			if r.release != nil {
				_ = r.future.Error() // the slot is free once the proposal is decided
				r.release()
			}
			continue // drain so the reader never blocks
		}
		msg := r.msg
		if r.future != nil {
			if r.future != waited && c.Buffered() > 0 {
				if err := c.Flush(); err != nil {
					broken = true
					c.Close()
				}
			}
			waited = r.future
			msg = cs.applied(r.req, r.future)
			decided = time.Now()
			if r.hold != nil {
				var ok bool
				if msg, ok = cs.awaitMembers(c, r.hold, r.future, msg); !ok {
					broken = true
					c.Close()
				}
			}
			if reg, ok := msg.(*wire.Registered); ok {
				reg.Intragroup = r.intragroup
			}
		}
		if r.release != nil {
			r.release()
		}
		if broken {
			continue
		}
		if msg == nil {
			cs.Log.Error("internal error: a request produced no reply; closing the connection so the client retries")
			broken = true
			c.Close()
			continue
		}
		err := c.Write(msg)
		if err == nil && (replies.len() == 0 || c.Buffered() > 256<<10) {
			err = c.Flush()
		}
		if !r.read.IsZero() && err == nil {
			written := cs.Stages.Since(stagetime.Answer, decided)
			cs.Stages.Observe(stagetime.Total, written.Sub(r.read))
		}
		if err != nil {
			broken = true
			c.Close()
		}
	}
}

// applied waits for a proposal (Publish, Register or Consumed) and turns
// its outcome into the answer.
func (cs *Server) applied(req wire.Message, f raft.ApplyFuture) wire.Message {
	reqID := reqIDOf(req)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return cs.redirect(reqID)
		}
		return &wire.Error{ReqID: reqID, Code: wire.CodeUnavailable, Message: err.Error()}
	}
	switch res := f.Response().(type) {
	case error:
		return &wire.Error{ReqID: reqID, Code: wire.CodeInternal, Message: res.Error()}
	case *repository.Result:
		if errors.Is(res.Err, repository.ErrStaleSession) {
			return &wire.Error{ReqID: reqID, Code: wire.CodeBusy, Message: res.Err.Error()}
		}
		if res.Err != nil {
			return &wire.Error{ReqID: reqID, Code: wire.CodeBadRequest, Message: res.Err.Error()}
		}
		switch {
		case res.Publish != nil:
			p := res.Publish
			if p.Conflicts > 0 && ackConflicts(req, p) > 0 {
				cs.Log.Error("CONSISTENCY VIOLATION: a publisher sent a different payload for sequence numbers the group already holds (sequence reuse); the held payloads were kept",
					"source", p.Source, "first_conflict", p.FirstConflict, "conflicts", p.Conflicts)
			}
			return publishAnswer(req, p)
		case res.Consumed != nil:
			return &wire.OK{ReqID: reqID}
		case res.Receiver != nil:
			return cs.receiverRegistered(req, res.Receiver)
		case res.Register != nil:
			r := res.Register
			return &wire.Registered{ReqID: reqID, Source: r.Source, Group: cs.Group, GroupID: cs.Repo.GroupID(), HighSeq: r.HighSeq, LowSeq: r.LowSeq}
		}
	}
	return &wire.Error{ReqID: reqID, Code: wire.CodeInternal, Message: "the store produced no result for the request"}
}

// publishAnswer answers the Publish frame req, which may have been proposed
// together with others: an Ack of req's own range, or a Nak when some of it
// is lost (lostRanges).
func publishAnswer(req wire.Message, p *repository.PublishResult) wire.Message {
	ack := publishAck(req, p)
	var lost []wire.Range
	for _, r := range lostRanges(p) {
		if from, to := max(r.From, ack.FirstSeq), min(r.To, ack.LastSeq); from <= to {
			lost = append(lost, wire.Range{From: from, To: to})
		}
	}
	if len(lost) == 0 {
		return ack
	}
	return &wire.Nak{ReqID: ack.ReqID, Source: ack.Source, FirstSeq: ack.FirstSeq, LastSeq: ack.LastSeq, HighSeq: ack.HighSeq, Lost: lost}
}

// lostRanges is what the group knows it has lost of an entry's range (UM's
// stability NAK): the sequence numbers at or below what retention released
// for the source (TrimmedThrough) that the group never held. It does not
// hold them and will never store them again, so an Ack, which says they
// are stable in the group, would not be true. Apply reports them
// (PublishResult.Lost), so the answer is as deterministic as the apply it
// comes from.
//
// Everything else of the entry is acknowledged: a sequence number the
// group holds is a no-op, acknowledged however often it is sent again,
// and so is one the group held until retention released it (the
// publisher's Ack was lost on the way, and a receiver-paced source's
// receivers consumed it meanwhile): it was stable in the group. Only
// where the group's record of released gaps no longer reaches (it keeps
// the newest) is such a number reported lost, since whether it was held
// is not known.
func lostRanges(p *repository.PublishResult) []wire.Range {
	out := make([]wire.Range, len(p.Lost))
	for i, r := range p.Lost {
		out[i] = wire.Range{From: r.From, To: r.To}
	}
	return out
}

// publishAck acknowledges the Publish frame req, which may have been
// proposed together with others: it acknowledges req's own range.
func publishAck(req wire.Message, p *repository.PublishResult) *wire.Ack {
	first, last := p.FirstSeq, p.LastSeq
	if m, ok := req.(*wire.Publish); ok {
		first, last = m.FirstSeq, m.FirstSeq+uint64(len(m.Payloads))-1
	}
	return &wire.Ack{ReqID: reqIDOf(req), Source: p.Source, FirstSeq: first, LastSeq: last, HighSeq: p.HighSeq, Conflicts: ackConflicts(req, p)}
}

// ackConflicts attributes an entry's conflicts to the frame holding its
// first conflicting sequence number, so that the counts over the frames of
// a merged entry add up to the entry's.
func ackConflicts(req wire.Message, p *repository.PublishResult) int {
	m, ok := req.(*wire.Publish)
	if !ok || p.Conflicts == 0 {
		return p.Conflicts
	}
	if p.FirstConflict < m.FirstSeq || p.FirstConflict >= m.FirstSeq+uint64(len(m.Payloads)) {
		return 0
	}
	return p.Conflicts
}
