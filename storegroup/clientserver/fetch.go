package clientserver

import (
	"context"
	"errors"
	"slices"
	"time"

	"umstore/internal/clientperm"
	"umstore/repository"
	"umstore/wire"
)

// maxDigestCount bounds what a store hashes for one RangeDigest request.
const maxDigestCount = 65536

// fetch answers m from this store's repository. A message damaged at rest
// is never served: an intact copy from another member or group takes its
// place, or it is absent (not held here). Only the leader looks for copies
// at once; a Local fetch is another member looking for its own copies, and
// this store looks for its own in the background.
func (cs *Server) fetch(ctx context.Context, m *wire.Fetch) wire.Message {
	info, ok, err := cs.Repo.Source(m.Source)
	if err == nil && !m.Local && (!ok || m.To > info.HighSeq) && cs.settled(ctx) {
		// A read past what is committed: see what the leader applied too.
		info, ok, err = cs.Repo.Source(m.Source)
	}
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep := &wire.FetchReply{ReqID: m.ReqID, Source: m.Source, Known: ok}
	if !ok {
		return rep
	}
	rep.HighSeq, rep.LowSeq, rep.Released, rep.Unpublished = info.HighSeq, info.LowSeq, info.TrimmedThrough, wireRanges(info.Unpublished)
	rep.Through = m.To
	if m.From > m.To || m.From > info.HighSeq {
		return rep
	}
	count := m.MaxCount
	if count <= 0 {
		count = defaultFetchCount
	}
	count = min(count, maxFetchCount)
	bytes := m.MaxBytes
	if bytes <= 0 {
		bytes = defaultFetchBytes
	}
	bytes = min(bytes, cs.MaxFrame/2)
	to := min(m.To, info.HighSeq)
	msgs, err := cs.Read(ctx, m.Source, m.From, to, count, bytes, !m.Local)
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep.Msgs = servedMsgs(msgs)
	if cutShort(msgs, to) {
		rep.Through = msgs[len(msgs)-1].Seq
	}
	return rep
}

// cutShort reports whether a read of [from, to] may have stopped at a limit
// before to: then the reply covers only up to its last message. A read
// that was not cut returns every message held up to to, so one ending
// before to either was cut (by count, or by a next message too large for
// the byte budget, however little the reply holds) or ends at a gap: saying
// so costs the client one more request, claiming to to would hide messages.
func cutShort(msgs []repository.Message, to uint64) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Seq < to
}

// servedMsgs turns read messages into the wire's, each with its checksum:
// the one the repository keeps, or, for a message stored without one
// (stored before checksums), its checksum as read, which still guards its
// way to the reader.
func servedMsgs(msgs []repository.Message) []wire.Msg {
	out := make([]wire.Msg, len(msgs))
	for i, m := range msgs {
		crc := m.CRC
		if crc == 0 {
			crc = wire.Checksum(m.Payload)
		}
		out[i] = wire.Msg{Seq: m.Seq, Payload: m.Payload, CRC: crc}
	}
	return out
}

// A Sources answer holds at most sourcesPageCount sources, and stops
// adding them past sourcesPageBytes of names and ranges: well inside a
// frame (wire.DefaultMaxFrame) whatever a client registered, and a page of
// work for the leader per request.
const (
	sourcesPageCount = 2000
	sourcesPageBytes = 2 << 20
)

// sources answers a Sources request with one page of the sources who may
// see (publish or receive): a client identity learns nothing of the others,
// not even how many there are (a page filtered to nothing still says where
// the next begins).
func (cs *Server) sources(m *wire.Sources, who *clientperm.Identity) wire.Message {
	infos, next, err := cs.Repo.SourcesPage(m.After, sourcesPageCount, sourcesPageBytes)
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	if who != nil {
		infos = slices.DeleteFunc(infos, func(in repository.SourceInfo) bool { return !who.MaySee(in.Name) })
	}
	rep := &wire.SourceList{ReqID: m.ReqID, Group: cs.Group, GroupID: cs.Repo.GroupID(), Sources: make([]wire.SourceState, len(infos)), Next: next}
	for i, in := range infos {
		st := wire.SourceState{Name: in.Name, HighSeq: in.HighSeq, LowSeq: in.LowSeq, Count: in.Count, Released: in.TrimmedThrough, Unpublished: wireRanges(in.Unpublished)}
		if cs.Conflicts != nil {
			st.Conflicts = cs.Conflicts(in.Name)
		}
		for _, g := range in.Gaps {
			st.Gaps = append(st.Gaps, wire.Range{From: g.From, To: g.To})
		}
		rep.Sources[i] = st
	}
	return rep
}

// rangeDigest answers a RangeDigest request.
func (cs *Server) rangeDigest(m *wire.RangeDigest) wire.Message {
	count := m.MaxCount
	if count <= 0 || count > maxDigestCount {
		count = maxDigestCount
	}
	rep := &wire.RangeDigestReply{ReqID: m.ReqID, Source: m.Source, Through: m.To}
	if m.From > m.To {
		return rep
	}
	sum, err := cs.Repo.RangeDigest(m.Source, m.From, m.To, count)
	if errors.Is(err, repository.ErrUnknownSource) {
		return rep
	}
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep.Known, rep.Through, rep.Count, rep.Sum = true, sum.Through, sum.Count, sum.Sum[:]
	return rep
}

// settledWait bounds settled's wait: the store commits within its
// repository commit interval (milliseconds) unless it is stopping.
const settledWait = time.Second

// settled waits until what the leader applied before now is what its
// reads see. A store may leave publishes applied but uncommitted for a few
// milliseconds (repository.ApplyDeferred, storegroup's fsm_commit.go); a
// Fetch, Sources or RangeDigest answered from before them would say that
// messages the group has acknowledged are not held. The reader waits for
// the next commit instead of forcing one: a client asking in a loop costs
// itself the wait, not the store a commit per request. (A Fetch waits only
// when it reads past the committed highest: a receiver catching up on what
// is committed is not slowed down.) It reports whether it waited.
func (cs *Server) settled(ctx context.Context) bool {
	if cs.NextApplied == nil || cs.Repo == nil {
		return false
	}
	next := cs.NextApplied()
	if n, _ := cs.Repo.Pending(); n == 0 {
		return false
	}
	t := time.NewTimer(settledWait)
	defer t.Stop()
	select {
	case <-next:
	case <-ctx.Done():
	case <-t.C:
	}
	return true
}
