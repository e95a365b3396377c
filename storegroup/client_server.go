package storegroup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/wire"
)

// Limits on client requests.
const (
	maxSourceName     = repository.MaxSourceNameLen
	defaultFetchCount = 1000
	maxFetchCount     = 10000
	defaultFetchBytes = 1 << 20
	handshakeTimeout  = 10 * time.Second
	// pendingReplies bounds the requests a connection may have in flight in
	// the log; a client that pipelines more is slowed by TCP backpressure.
	pendingReplies = 4096
)

// clientServer accepts wire-protocol connections for one store.
type clientServer struct {
	s  *Store
	ln net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newClientServer(s *Store, addr string) (*clientServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for clients on %s: %w (is another store using the port?)", addr, err)
	}
	if cfg := s.cfg.Security.ServerTLS; cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	return &clientServer{s: s, ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

func (cs *clientServer) serve() {
	for {
		nc, err := cs.ln.Accept()
		if err != nil {
			cs.mu.Lock()
			closed := cs.closed
			cs.mu.Unlock()
			if closed {
				return
			}
			cs.s.log.Warn("accepting a client connection failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		cs.mu.Lock()
		if cs.closed {
			cs.mu.Unlock()
			nc.Close()
			return
		}
		cs.conns[nc] = struct{}{}
		cs.wg.Add(1)
		cs.mu.Unlock()
		go func() {
			defer cs.wg.Done()
			cs.handle(nc)
			cs.mu.Lock()
			delete(cs.conns, nc)
			cs.mu.Unlock()
		}()
	}
}

func (cs *clientServer) close() {
	cs.mu.Lock()
	cs.closed = true
	cs.ln.Close()
	for nc := range cs.conns {
		nc.Close()
	}
	cs.mu.Unlock()
	cs.wg.Wait()
}

// reply is one answer owed to a client, in request order: either ready now
// or waiting for a raft entry to be applied.
type reply struct {
	msg    wire.Message
	future raft.ApplyFuture
	req    wire.Message
	// release, if set, is the connection's proposal slots: one is freed
	// once this reply is answered (see proposePublish).
	release chan struct{}
}

// handle serves one connection: a reader that turns requests into raft
// proposals or immediate answers, and a writer that answers in request
// order, flushing whenever it has caught up.
func (cs *clientServer) handle(nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	cs.s.metrics.connections.Add(1)
	defer cs.s.metrics.connections.Add(-1)
	c := wire.NewConn(nc, cs.s.cfg.MaxFrame)
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: cs.s.cfg.Name, Group: cs.s.cfg.Group}, cs.s.cfg.Security.Token); err != nil {
		if errors.Is(err, wire.ErrUnauthorized) {
			cs.s.metrics.refused(refusedUnauthorized)
			cs.s.log.Warn("refused a client without the deployment's token", "remote", nc.RemoteAddr(), "err", err)
		} else {
			cs.s.log.Debug("client handshake failed", "remote", nc.RemoteAddr(), "err", err)
		}
		return
	}
	_ = nc.SetDeadline(time.Time{})

	replies := make(chan reply, pendingReplies)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		cs.writeReplies(c, replies)
	}()
	conn := &connState{sessions: map[string]string{}}
	connCtx, cancel := context.WithCancel(cs.s.ctx)
	var subs sync.WaitGroup
	defer func() {
		cancel()
		close(replies)
		<-writerDone // answers owed are flushed first
		nc.Close()   // unblocks subscriptions stuck writing
		subs.Wait()
	}()
	frames := make(chan frame, readAhead)
	go readFrames(connCtx, c, frames)
	slots := make(chan struct{}, maxProposalsInFlight)
	var next *frame // read but not yet handled
	for {
		var f frame
		if next != nil {
			f, next = *next, nil
		} else {
			var open bool
			if f, open = <-frames; !open {
				return // the reader stopped: the store is closing
			}
		}
		m, err := f.m, f.err
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				cs.s.metrics.refused(refusedTooLarge)
				replies <- reply{msg: &wire.Error{Code: wire.CodeTooLarge, Message: err.Error() + "; closing the connection"}}
			}
			if wire.IsFatal(err) {
				return
			}
			code, reason := wire.CodeBadRequest, refusedMalformed
			if errors.Is(err, wire.ErrUnknownType) {
				code, reason = wire.CodeUnknown, refusedUnknownType
			}
			cs.s.metrics.refused(reason)
			replies <- reply{msg: &wire.Error{Code: code, Message: err.Error()}}
			continue
		}
		if sd, ok := m.(*wire.Shutdown); ok {
			replies <- cs.shutdown(sd, nc)
			continue
		}
		if sub, ok := m.(*wire.Subscribe); ok {
			if rep, ok := cs.checkSubscribe(sub); !ok {
				replies <- rep
				continue
			}
			subs.Add(1)
			go func() { defer subs.Done(); cs.subscribe(connCtx, c, sub) }()
			continue
		}
		if ka, ok := m.(*wire.KeepAlive); ok {
			cs.keepAlive(ka)
			continue
		}
		if p, ok := m.(*wire.Publish); ok {
			if err := checkPublish(p); err != nil {
				replies <- reply{msg: &wire.Error{ReqID: p.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-connCtx.Done():
				return
			}
			var batch []*wire.Publish
			batch, next = gather([]*wire.Publish{p}, frames)
			for _, r := range cs.proposePublish(batch, conn, slots) {
				replies <- r
			}
			continue
		}
		replies <- cs.dispatch(m, conn)
	}
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
				<-r.release
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
		}
		if r.release != nil {
			<-r.release
		}
		if msg == nil {
			cs.s.log.Error("internal error: a request produced no reply; closing the connection so the client retries")
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

// connState is what the server remembers about one client connection.
type connState struct {
	sessions map[string]string // source -> the session that registered it on this connection
}

// dispatch handles one request.
func (cs *clientServer) dispatch(m wire.Message, conn *connState) reply {
	s := cs.s
	switch m := m.(type) {
	case *wire.Probe:
		st := s.Status()
		rep := &wire.ProbeReply{ReqID: m.ReqID, Store: st.Name, Group: st.Group, GroupID: st.GroupID, HasState: st.HasState, State: st.State,
			AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LastTerm: st.LastTerm, CatchingUp: st.CatchingUp}
		if l, ok := s.leader(); ok {
			rep.Leader = l.ClientAddr
		}
		if peers, err := s.repo.PeerGroups(); err == nil {
			for idx, id := range peers {
				rep.KnownGroups = append(rep.KnownGroups, wire.GroupIdentity{Index: idx, GroupID: id})
			}
			sort.Slice(rep.KnownGroups, func(i, j int) bool { return rep.KnownGroups[i].Index < rep.KnownGroups[j].Index })
		}
		return reply{msg: rep}
	case *wire.Register:
		if err := checkSource(m.Source); err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
		}
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		expired, err := s.sessions.claim(m.Source, m.Session, time.Now(), s.cfg.SourceActivityTimeout)
		if err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBusy, Message: err.Error()}}
		}
		if expired != "" {
			s.proposeExpiry(m.Source, expired, "a new publisher takes over after the old one's silence")
		}
		conn.sessions[m.Source] = m.Session
		cmd := repository.EncodeRegister(repository.Register{Source: m.Source, Session: m.Session, UnixNano: time.Now().UnixNano()})
		return reply{req: m, future: s.raftNode().Apply(cmd, s.cfg.ApplyTimeout)}
	case *wire.Fetch:
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		return reply{msg: cs.fetch(m)}
	case *wire.Sources:
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		return reply{msg: cs.sources(m)}
	case *wire.Consumed:
		if err := checkSource(m.Source); err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
		}
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		cmd := repository.EncodeConsumed(repository.Consumed{Source: m.Source, Receiver: m.Receiver, Seq: m.Seq, UnixNano: time.Now().UnixNano()})
		return reply{req: m, future: s.raftNode().Apply(cmd, s.cfg.ApplyTimeout)}
	default:
		return reply{msg: &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("a store does not accept frame type %d from clients", m.Type())}}
	}
}

// notLeader returns (redirect, false) unless this store leads its group and
// has applied everything committed before its term.
func (cs *clientServer) notLeader(reqID uint64) (reply, bool) {
	if cs.s.IsLeader() {
		return reply{}, true
	}
	return reply{msg: cs.redirect(reqID)}, false
}

// redirect tells the client where the leader is, if this store knows.
func (cs *clientServer) redirect(reqID uint64) *wire.NotLeader {
	nl := &wire.NotLeader{ReqID: reqID}
	if l, ok := cs.s.leader(); ok && l.Name != cs.s.cfg.Name {
		nl.Leader, nl.LeaderName = l.ClientAddr, l.Name
	}
	return nl
}

// applied waits for a proposal and turns its outcome into the answer.
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
				cs.s.log.Error("CONSISTENCY VIOLATION: a publisher sent a different payload for sequence numbers the group already holds (sequence reuse); the held payloads were kept",
					"source", p.Source, "first_conflict", p.FirstConflict, "conflicts", p.Conflicts)
			}
			return publishAck(req, p)
		case res.Consumed != nil:
			return &wire.OK{ReqID: reqID}
		case res.Register != nil:
			r := res.Register
			return &wire.Registered{ReqID: reqID, Source: r.Source, Group: cs.s.cfg.Group, GroupID: cs.s.repo.GroupID(), HighSeq: r.HighSeq, LowSeq: r.LowSeq}
		}
	}
	return &wire.Error{ReqID: reqID, Code: wire.CodeInternal, Message: "the store produced no result for the request"}
}

func (cs *clientServer) fetch(m *wire.Fetch) wire.Message {
	info, ok, err := cs.s.repo.Source(m.Source)
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep := &wire.FetchReply{ReqID: m.ReqID, Source: m.Source, Known: ok}
	if !ok {
		return rep
	}
	rep.HighSeq, rep.LowSeq = info.HighSeq, info.LowSeq
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
	bytes = min(bytes, cs.s.cfg.MaxFrame/2)
	msgs, err := cs.s.repo.Read(m.Source, m.From, min(m.To, info.HighSeq), count, bytes)
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep.Msgs = make([]wire.Msg, len(msgs))
	for i, msg := range msgs {
		rep.Msgs[i] = wire.Msg{Seq: msg.Seq, Payload: msg.Payload}
	}
	// A reply cut short by a limit covers only up to its last message.
	if len(msgs) == count || replyBytes(msgs) >= bytes {
		rep.Through = msgs[len(msgs)-1].Seq
	}
	return rep
}

// shutdown stops the store cleanly at an operator's request, answering
// first. Without a deployment token only a loopback client may ask.
func (cs *clientServer) shutdown(m *wire.Shutdown, nc net.Conn) reply {
	if cs.s.cfg.Security.Token == "" {
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			cs.s.metrics.refused(refusedUnauthorized)
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeAuth, Message: "stopping a store needs the deployment's token, or a client on loopback"}}
		}
	}
	cs.s.log.Info("stopping at an operator's request", "remote", nc.RemoteAddr())
	go func() {
		time.Sleep(100 * time.Millisecond) // let the answer go out
		cs.s.Close()
	}()
	return reply{msg: &wire.OK{ReqID: m.ReqID}}
}

// keepAlive records that a publisher is alive, or frees its source when it
// says goodbye.
func (cs *clientServer) keepAlive(m *wire.KeepAlive) {
	s := cs.s
	if !s.IsLeader() {
		return
	}
	if !m.Leaving {
		s.sessions.touch(m.Source, m.Session, time.Now())
		return
	}
	go s.proposeExpiry(m.Source, m.Session, "its publisher closed")
}

func (cs *clientServer) sources(m *wire.Sources) wire.Message {
	infos, err := cs.s.repo.Sources()
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep := &wire.SourceList{ReqID: m.ReqID, Group: cs.s.cfg.Group, GroupID: cs.s.repo.GroupID(), Sources: make([]wire.SourceState, len(infos))}
	for i, in := range infos {
		st := wire.SourceState{Name: in.Name, HighSeq: in.HighSeq, LowSeq: in.LowSeq, Count: in.Count}
		for _, g := range in.Gaps {
			st.Gaps = append(st.Gaps, wire.Range{From: g.From, To: g.To})
		}
		rep.Sources[i] = st
	}
	return rep
}

func replyBytes(msgs []repository.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Payload)
	}
	return n
}

func reqIDOf(m wire.Message) uint64 {
	switch m := m.(type) {
	case *wire.Register:
		return m.ReqID
	case *wire.Publish:
		return m.ReqID
	case *wire.Consumed:
		return m.ReqID
	}
	return 0
}

func checkSource(name string) error {
	if name == "" {
		return errors.New("source name is empty")
	}
	if len(name) > maxSourceName {
		return fmt.Errorf("source name is %d bytes; the limit is %d", len(name), maxSourceName)
	}
	return nil
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
	if m.FirstSeq+uint64(len(m.Payloads))-1 < m.FirstSeq {
		return errors.New("sequence numbers overflow")
	}
	return nil
}
