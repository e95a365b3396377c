package storegroup

import (
	"context"
	"time"

	"umstore/repository"
	"umstore/wire"
)

// Publish frames of one connection are proposed to raft as they come, but
// at most maxProposalsInFlight at a time. While that many wait in the log,
// later frames queue; when a proposal resolves, the queued frames that
// continue one another (same source, consecutive sequence numbers) go as
// one raft entry. Under light load every frame goes at once; under heavy
// load many small frames share an entry, and with it the log's per-entry
// costs (an encode, a bbolt key, an apply) on every member.
//
// The bounds were chosen by measurement (BENCH.md): with 4 proposals in
// flight a publisher with a window of 4096 messages of 1 KiB kept only half
// its window in the log; and raft-boltdb stores an entry as one bbolt value,
// so entries of 1 MiB made each log write rewrite up to three earlier
// entries sharing the last leaf page. 16 proposals of at most 512 KiB took
// 1 KiB messages from 23k to 35k msgs/s.
const (
	maxProposalsInFlight = 16
	// A merged entry stays below these, so an entry is never larger than
	// the largest frame a publisher sends by default.
	maxMergedMessages = 4096
	maxMergedBytes    = 512 << 10
	// readAhead is how many decoded frames wait for the dispatcher.
	readAhead = 256
)

// frame is one read from a client connection: a message or the error that
// ended or spoiled the read.
type frame struct {
	m   wire.Message
	err error
}

// readFrames decodes frames from c until a fatal error, which it delivers
// last. It stops early when ctx ends. It closes out when it returns.
func readFrames(ctx context.Context, c *wire.Conn, out chan<- frame) {
	defer close(out)
	for {
		m, err := c.Read()
		select {
		case out <- frame{m: m, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil && wire.IsFatal(err) {
			return
		}
	}
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
			count+len(p.Payloads) > maxMergedMessages || size+payloadBytes(p.Payloads) > maxMergedBytes {
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

// proposePublish proposes batch (consecutive frames of one source, checked
// by checkPublish) as one raft entry and returns one reply per frame, in
// order. The last reply carries the proposal's slot, freed once it is
// answered; a batch refused before proposing frees its slot at once.
func (cs *clientServer) proposePublish(batch []*wire.Publish, conn *connState, slots chan struct{}) []reply {
	s := cs.s
	out := make([]reply, len(batch))
	if !s.IsLeader() {
		for i, p := range batch {
			out[i] = reply{msg: cs.redirect(p.ReqID)}
		}
		<-slots
		return out
	}
	first := batch[0]
	payloads := first.Payloads
	if len(batch) > 1 {
		payloads = make([][]byte, 0, len(batch)*len(first.Payloads))
		for _, p := range batch {
			payloads = append(payloads, p.Payloads...)
		}
	}
	pub := repository.Publish{Source: first.Source, FirstSeq: first.FirstSeq, Payloads: payloads}
	var cmd []byte
	if session, ok := conn.sessions[first.Source]; ok {
		// On behalf of the registered session: refused at apply if the
		// session no longer holds the source by then.
		s.sessions.touch(first.Source, session, time.Now())
		cmd = repository.EncodePublishAs(repository.PublishAs{Session: session, Publish: pub})
	} else {
		cmd = repository.EncodePublish(pub)
	}
	s.metrics.mergedFrames.Observe(float64(len(batch)))
	f := s.proposed.propose(s.raftNode(), cmd, s.cfg.ApplyTimeout)
	for i, p := range batch {
		out[i] = reply{req: p, future: f}
	}
	out[len(out)-1].release = slots
	return out
}

// publishAck answers the Publish frame req, which may have been proposed
// together with others: it acknowledges req's own range.
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
