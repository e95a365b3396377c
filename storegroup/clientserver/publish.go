package clientserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"umstore/repository"
	"umstore/storegroup/stagetime"
	"umstore/wire"
)

// The Publish half of a client connection, from frame to Ack (steps 3 and 5
// of ARCHITECTURE.md's "path of one message"):
//
//  1. publish takes a slot of the connection's window (at most
//     maxProposalsInFlight proposals of a source in the log, and bounds
//     for the connection's sources together: window.go);
//  2. gather adds the frames that queued meanwhile and continue one another
//     (same source, next sequence number): they become one raft entry;
//  3. the batch is encoded as PublishAs, on behalf of the session that
//     registered the source on this connection, and proposed with
//     proposal.Proposer.ProposeDecided, which answers once the FSM has decided the result;
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
//   - the frame opens a gap of at most Limits.MaxSeqJump numbers past the
//     highest this store knows any group holds for the source
//     (CodeBadRequest, seqjump.go), so no client can use a source up;
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

// publish handles the Publish frame p, read at read, and the frames gather
// adds to it. It returns the frame gather read but could not add, to be
// handled next, and false if the connection is closing. (The stages of
// frames merged into p's entry are timed from p's read: they were read
// later, so their queued and total times are overstated, never hidden.)
func (cs *Server) publish(ctx context.Context, p *wire.Publish, read time.Time, queued <-chan frame, conn *connState, slots *window, replies *replyQueue) (next *frame, ok bool) {
	if err := checkPayloads(p); err != nil {
		cs.Metrics.refused(refusedTooLarge)
		replies.put(reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeTooLarge, Message: err.Error()}})
		return nil, true
	}
	if err := checkPublish(p); err != nil {
		cs.Metrics.refused(refusedInvalid)
		replies.put(reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}})
		return nil, true
	}
	if err := p.VerifyChecksums(); err != nil {
		cs.Metrics.refused(refusedChecksum)
		cs.damagedFrameLog(p, err)
		replies.put(reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeChecksum,
			Message: err.Error() + ": the frame was damaged on its way; nothing of it was stored, send it again"}})
		return nil, true
	}
	if e := cs.checkJump(p, conn); e != nil {
		cs.Metrics.refused(refusedInvalid)
		replies.put(reply{msg: e})
		return nil, true
	}
	if _, ok := conn.sessions[p.Source]; !ok {
		if !cs.IsLeader() {
			// Only a leader registers; a follower sends the client there.
			replies.put(reply{msg: cs.redirect(p.ReqID)})
			return nil, true
		}
		cs.Metrics.refused(refusedNotRegistered)
		replies.put(reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeNotRegistered,
			Message: fmt.Sprintf("register source %q on this connection first: a store accepts a Publish only on the connection that registered its source; nothing was stored", p.Source)}})
		return nil, true
	}
	if !slots.take(ctx, p.Source) {
		return nil, false
	}
	batch, next := gather([]*wire.Publish{p}, queued)
	size := 0
	for _, b := range batch {
		size += payloadBytes(b.Payloads)
	}
	release := slots.hold(p.Source, size)
	if !cs.pace(ctx, p.Source, conn.sessions[p.Source], batch, replies) {
		release()
		return nil, false
	}
	if !cs.IsLeader() {
		release() // refused before proposing: nothing in the log
		for _, p := range batch {
			replies.put(reply{msg: cs.redirect(p.ReqID)})
		}
		return next, true
	}
	cs.Metrics.MergedFrames.Observe(float64(len(batch)))
	cs.Stages.Since(stagetime.Queued, read)
	cs.recordUnused(p, conn)
	f := cs.Proposer.ProposeDecided(cs.encodePublish(batch, conn))
	hold := cs.holdFor(ctx, conn, p.Source)
	for i, p := range batch {
		r := reply{req: p, future: f, hold: hold, read: read}
		if i == len(batch)-1 {
			r.release = release // the proposal's slot, freed once it is answered
		}
		replies.put(r)
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
func (cs *Server) encodePublish(batch []*wire.Publish, conn *connState) []byte {
	pub := batchPublish(batch)
	conn.proposedThrough(pub.Source, pub.FirstSeq, len(pub.Payloads))
	session := conn.sessions[pub.Source]
	cs.TouchSource(pub.Source, session, time.Now())
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

// checkPayloads refuses a Publish carrying a payload larger than
// wire.MaxPayload: the store could never serve it back in a reply.
func checkPayloads(p *wire.Publish) error {
	for i, pl := range p.Payloads {
		if len(pl) > wire.MaxPayload {
			return fmt.Errorf("message %d of the batch (sequence %d) has a payload of %d bytes; the largest a store keeps is %d (wire.MaxPayload): split it, or store it elsewhere and publish a reference",
				i+1, p.FirstSeq+uint64(i), len(pl), wire.MaxPayload)
		}
	}
	return nil
}

// damagedFrameLog warns, at most once per limitLogInterval, of a Publish
// refused because a payload did not match its checksum.
func (cs *Server) damagedFrameLog(p *wire.Publish, err error) {
	if dropped, ok := cs.damagedLog.Allow(time.Now()); ok {
		cs.Log.Warn("refused a Publish frame damaged on its way: a payload does not match the checksum its publisher sent; nothing of the frame was stored (the publisher sends it again)",
			"source", p.Source, "first_seq", p.FirstSeq, "err", err, "refused_since_last_warning", dropped)
	}
}
