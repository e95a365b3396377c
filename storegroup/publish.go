package storegroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/wire"
)

// The Publish half of a client connection, from frame to Ack (steps 3 and 5
// of ARCHITECTURE.md's "path of one message"):
//
//  1. publish takes a slot of the connection's window (at most
//     maxProposalsInFlight proposals in the log, proposer.go);
//  2. gather adds the frames that queued meanwhile and continue one another
//     (same source, next sequence number): they become one raft entry;
//  3. the batch is encoded as PublishAs, on behalf of the session that
//     registered the source on this connection, and proposed with
//     proposeDecided, which answers once the FSM has decided the result;
//  4. writeReplies answers every frame in request order, flushing before it
//     waits for a later proposal, and frees the slot once the answer is
//     written;
//  5. publishAck acknowledges each frame's own range and attributes a merged
//     entry's conflicts to the frame that holds the first.
//
// Under light load every frame goes at once; under heavy load many small
// frames share an entry, and with it the log's per-entry costs (an encode, a
// bbolt key, an apply) on every member.
//
// What a connection may write. A Publish is refused, with an Error frame
// and nothing proposed, unless:
//
//   - this connection registered its source (Register, answered
//     Registered): a client that never registered, or registered another
//     source, writes nothing (CodeNotRegistered). The registration is this
//     connection's, never another's, and the entry names its session, so
//     apply refuses it once another session holds the source
//     (repository.ErrStaleSession, answered CodeBusy);
//   - every sequence number is in 1..wire.MaxSeq (CodeBadRequest); apply
//     refuses the same (repository.ErrSeqCeiling), so no entry can;
//   - every payload matches the checksum its publisher sent with it
//     (CodeChecksum): a frame damaged on its way is refused whole. A frame
//     without checksums (a publisher older than them) is accepted as it
//     is; the checksums go into the entry (repository.Publish.Checksums)
//     and frames with and without them are never merged.
//
// Inside that range the repository's rules keep the rest: a sequence
// number held is never overwritten (a different payload counts as a
// conflict) and is acknowledged, so resends stay harmless; one at or below
// what retention trimmed is never stored again, and answered with a Nak
// (lostRange); one past the source's highest opens a gap that another
// group's copy may fill. Under intragroup all-active or all the answer
// waits for the members too (intragroup.go).

// A merged entry stays below these, so an entry is never larger than the
// largest frame a publisher sends by default. raft-boltdb stores an entry as
// one bbolt value, and entries of 1 MiB made each log write rewrite up to
// three earlier entries sharing the last leaf page (BENCH.md).
const (
	maxMergedMessages = 4096
	maxMergedBytes    = 512 << 10
)

// publish handles the Publish frame p and the frames gather adds to it. It
// returns the frame gather read but could not add, to be handled next, and
// false if the connection is closing.
func (cs *clientServer) publish(ctx context.Context, p *wire.Publish, queued <-chan frame, conn *connState, slots window, replies chan<- reply) (next *frame, ok bool) {
	if err := checkPublish(p); err != nil {
		cs.metrics.refused(refusedInvalid)
		replies <- reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
		return nil, true
	}
	if err := p.VerifyChecksums(); err != nil {
		cs.metrics.refused(refusedChecksum)
		cs.damagedFrameLog(p, err)
		replies <- reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeChecksum,
			Message: err.Error() + ": the frame was damaged on its way; nothing of it was stored, send it again"}}
		return nil, true
	}
	if _, ok := conn.sessions[p.Source]; !ok {
		if !cs.isLeader() {
			// Only a leader registers; a follower sends the client there.
			replies <- reply{msg: cs.redirect(p.ReqID)}
			return nil, true
		}
		cs.metrics.refused(refusedNotRegistered)
		replies <- reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeNotRegistered,
			Message: fmt.Sprintf("register source %q on this connection first: a store accepts a Publish only on the connection that registered its source; nothing was stored", p.Source)}}
		return nil, true
	}
	if !slots.take(ctx) {
		return nil, false
	}
	batch, next := gather([]*wire.Publish{p}, queued)
	if !cs.pace(ctx, p.Source, conn.sessions[p.Source], batch, replies) {
		slots.release()
		return nil, false
	}
	if !cs.isLeader() {
		slots.release() // refused before proposing: nothing in the log
		for _, p := range batch {
			replies <- reply{msg: cs.redirect(p.ReqID)}
		}
		return next, true
	}
	cs.metrics.mergedFrames.Observe(float64(len(batch)))
	f := cs.proposer.ProposeDecided(cs.encodePublish(batch, conn))
	hold := cs.holdFor(ctx, conn, p.Source)
	for i, p := range batch {
		r := reply{req: p, future: f, hold: hold}
		if i == len(batch)-1 {
			r.release = slots.release // the proposal's slot, freed once it is answered
		}
		replies <- r
	}
	return next, true
}

// gather takes from queued the frames that continue batch's last Publish,
// without waiting, until a limit or a frame that does not fit. That frame
// is returned to be handled next.
func gather(batch []*wire.Publish, queued <-chan frame) ([]*wire.Publish, *frame) {
	last := batch[0]
	count, size := len(last.Payloads), payloadBytes(last.Payloads)
	for {
		var f frame
		select {
		case got, open := <-queued:
			if !open {
				return batch, nil
			}
			f = got
		default:
			return batch, nil
		}
		p, ok := f.m.(*wire.Publish)
		if f.err != nil || !ok || !continues(last, p) || checkPublish(p) != nil ||
			count+len(p.Payloads) > maxMergedMessages || size+payloadBytes(p.Payloads) > maxMergedBytes ||
			(len(p.Checksums) > 0) != (len(last.Checksums) > 0) || p.VerifyChecksums() != nil {
			return batch, &f
		}
		batch = append(batch, p)
		last = p
		count += len(p.Payloads)
		size += payloadBytes(p.Payloads)
	}
}

// continues reports whether next starts right after prev on the same source.
func continues(prev, next *wire.Publish) bool {
	return next.Source == prev.Source && next.FirstSeq == prev.FirstSeq+uint64(len(prev.Payloads))
}

func payloadBytes(payloads [][]byte) int {
	n := 0
	for _, p := range payloads {
		n += len(p)
	}
	return n
}

// encodePublish makes batch (consecutive frames of one source, checked by
// checkPublish, registered on conn) one raft command, on behalf of the
// session that registered the source: refused at apply if that session no
// longer holds the source by then.
func (cs *clientServer) encodePublish(batch []*wire.Publish, conn *connState) []byte {
	pub := batchPublish(batch)
	session := conn.sessions[pub.Source]
	cs.sessions.touch(pub.Source, session, time.Now())
	return repository.EncodePublishAs(repository.PublishAs{Session: session, Publish: pub})
}

// batchPublish joins batch (consecutive frames of one source, all with
// checksums or all without) into one repository command.
func batchPublish(batch []*wire.Publish) repository.Publish {
	first := batch[0]
	payloads, checksums := first.Payloads, first.Checksums
	if len(batch) > 1 {
		payloads = make([][]byte, 0, len(batch)*len(first.Payloads))
		checksums = nil
		if len(first.Checksums) > 0 { // then every frame of the batch has them (gather)
			checksums = make([]uint32, 0, cap(payloads))
		}
		for _, p := range batch {
			payloads = append(payloads, p.Payloads...)
			checksums = append(checksums, p.Checksums...)
		}
	}
	// The checksums were verified on receipt; an older client sends none,
	// and apply computes them.
	return repository.Publish{Source: first.Source, FirstSeq: first.FirstSeq, Payloads: payloads, Checksums: checksums}
}

func checkPublish(m *wire.Publish) error {
	if err := checkSource(m.Source); err != nil {
		return err
	}
	if m.FirstSeq == 0 {
		return errors.New("sequence numbers start at 1")
	}
	if len(m.Payloads) == 0 {
		return errors.New("publish batch is empty")
	}
	if m.FirstSeq > wire.MaxSeq || uint64(len(m.Payloads))-1 > wire.MaxSeq-m.FirstSeq {
		return fmt.Errorf("a publish of %d messages from sequence number %d goes past %d, the highest a source may have; nothing was stored (publish under a new source name)",
			len(m.Payloads), m.FirstSeq, uint64(wire.MaxSeq))
	}
	return m.CheckShape()
}

// damagedFrameLog warns, at most once per limitLogInterval, of a Publish
// refused because a payload did not match its checksum.
func (cs *clientServer) damagedFrameLog(p *wire.Publish, err error) {
	if dropped, ok := cs.damagedLog.allow(time.Now()); ok {
		cs.log.Warn("refused a Publish frame damaged on its way: a payload does not match the checksum its publisher sent; nothing of the frame was stored (the publisher sends it again)",
			"source", p.Source, "first_seq", p.FirstSeq, "err", err, "refused_since_last_warning", dropped)
	}
}

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
}

// writeReplies answers in request order. On a write error it closes the
// connection, which ends the reader too. Answers are flushed whenever the
// writer has caught up, and before it waits for a proposal: an answer
// already written must not wait in the buffer for a later proposal to
// commit (at a steady rate there is always a later one).
func (cs *clientServer) writeReplies(c *wire.Conn, replies <-chan reply) {
	broken := false
	var waited raft.ApplyFuture // the last proposal waited for
	for r := range replies {
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
			cs.log.Error("internal error: a request produced no reply; closing the connection so the client retries")
			broken = true
			c.Close()
			continue
		}
		err := c.Write(msg)
		if err == nil && (len(replies) == 0 || c.Buffered() > 256<<10) {
			err = c.Flush()
		}
		if err != nil {
			broken = true
			c.Close()
		}
	}
}

// applied waits for a proposal (Publish, Register or Consumed) and turns
// its outcome into the answer.
func (cs *clientServer) applied(req wire.Message, f raft.ApplyFuture) wire.Message {
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
				cs.log.Error("CONSISTENCY VIOLATION: a publisher sent a different payload for sequence numbers the group already holds (sequence reuse); the held payloads were kept",
					"source", p.Source, "first_conflict", p.FirstConflict, "conflicts", p.Conflicts)
			}
			return publishAnswer(req, p)
		case res.Consumed != nil:
			return &wire.OK{ReqID: reqID}
		case res.Receiver != nil:
			return cs.receiverRegistered(req, res.Receiver)
		case res.Register != nil:
			r := res.Register
			return &wire.Registered{ReqID: reqID, Source: r.Source, Group: cs.group, GroupID: cs.repo.GroupID(), HighSeq: r.HighSeq, LowSeq: r.LowSeq}
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
