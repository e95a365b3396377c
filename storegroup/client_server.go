package storegroup

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"umstore/internal/wallclock"
	"umstore/quorum"
	"umstore/repository"
	"umstore/storegroup/proposal"
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
	// readAhead is how many decoded frames wait for the dispatcher.
	readAhead = 256
)

// clientDeps is what the client server needs from its store, and all it
// may touch of it. The store builds it in one place (Store.wireHelpers,
// open.go).
type clientDeps struct {
	name            string        // the store's name
	group           int           // the store's group index
	maxFrame        int           // Config.MaxFrame
	token           string        // the deployment's token; "" admits every client
	operatorToken   string        // the operators' token for Shutdown; "" when none
	activityTimeout time.Duration // Config.SourceActivityTimeout
	limits          ClientLimits  // Config.ClientLimits, defaults filled in by newClientServer

	log      *slog.Logger
	metrics  *storeMetrics
	repo     *repository.Repo // read only: every write is a proposal
	damage   *damageRepairer  // every message served is read through it (repair_damage.go)
	sessions *sessions        // the leader's view of which publisher holds a source
	proposer *proposal.Proposer

	// Receivers (receiver_server.go): the leader's view of receiver
	// sessions, Config.ReceiverActivityTimeout, whether publishers may ask
	// for receiver-paced persistence, and the hold on paced publishers.
	receivers       *receiverSessions
	receiverTimeout time.Duration
	allowPaced      bool
	pacer           *pacer

	intragroup intragroupDeps // the members a Publish answer waits for (intragroup.go)

	isLeader    func() bool                       // leads and has applied everything committed before its term
	leader      func() (Member, bool)             // the current leader, if known
	status      func() Status                     // the store's status, for probes
	nextApplied func() <-chan struct{}            // closed at the next applied batch
	expire      func(source, session, why string) // frees a source through the log
	stop        func() error                      // stops the store (an operator's Shutdown)
	pong        func(reqID uint64) *wire.Pong     // answers a Ping (leadership.go)
	members     *memberDesk                       // Members and MemberMove (members_move.go); nil: refused
}

// clientServer accepts wire-protocol connections for one store.
type clientServer struct {
	clientDeps
	ln net.Listener

	counter    *connCounter // connections per store and address, against limits
	refusalLog logEvery     // refused connections: one warning per interval
	slowLog    logEvery     // connections cut for a slow frame: likewise
	acceptLog  logEvery     // failed accepts: likewise
	damagedLog logEvery     // Publish frames refused for a checksum: likewise

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// limitLogInterval is how often a store repeats a warning about clients
// over a limit; the warning counts the ones in between.
const limitLogInterval = 10 * time.Second

func newClientServer(addr string, serverTLS *tls.Config, d clientDeps) (*clientServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for clients on %s: %w (is another store using the port?)", addr, err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	d.limits = d.limits.withDefaults(d.activityTimeout)
	return &clientServer{
		clientDeps: d,
		ln:         ln,
		conns:      map[net.Conn]struct{}{},
		counter:    newConnCounter(d.limits, processConnBudget()),
		refusalLog: logEvery{interval: limitLogInterval},
		slowLog:    logEvery{interval: limitLogInterval},
		acceptLog:  logEvery{interval: limitLogInterval},
		damagedLog: logEvery{interval: limitLogInterval},
	}, nil
}

// serve accepts connections until close; each connection's requests are
// served until ctx ends or the connection closes. A connection over a
// limit (ClientLimits) is refused at once.
func (cs *clientServer) serve(ctx context.Context) {
	for {
		nc, err := cs.ln.Accept()
		if err != nil {
			cs.mu.Lock()
			closed := cs.closed
			cs.mu.Unlock()
			if closed {
				return
			}
			if dropped, ok := cs.acceptLog.allow(time.Now()); ok {
				cs.log.Warn("accepting a client connection failed", "err", err, "failed_since_last_warning", dropped)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		key, reason, admitted := cs.counter.admit(nc.RemoteAddr())
		if !admitted {
			cs.refuse(nc, reason, key)
			continue
		}
		cs.mu.Lock()
		if cs.closed {
			cs.mu.Unlock()
			cs.counter.release(key)
			nc.Close()
			return
		}
		cs.conns[nc] = struct{}{}
		cs.wg.Add(1)
		cs.mu.Unlock()
		go func() {
			defer cs.wg.Done()
			defer cs.counter.release(key)
			cs.handle(ctx, nc)
			cs.mu.Lock()
			delete(cs.conns, nc)
			cs.mu.Unlock()
		}()
	}
}

// hangUp stops accepting and closes every connection, without waiting for
// their goroutines: a connection's writer may be waiting for raft to answer
// a proposal, which a raft that met a faulted log answers only once it is
// shut down (Store.stop waits for them after that, waitConns).
func (cs *clientServer) hangUp() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	cs.ln.Close()
	for nc := range cs.conns {
		nc.Close()
	}
}

// waitConns waits for the connections' goroutines to end, at most bound
// (none: for good). It reports whether they did.
func (cs *clientServer) waitConns(bound time.Duration) bool {
	if bound <= 0 {
		cs.wg.Wait()
		return true
	}
	done := make(chan struct{})
	go func() {
		cs.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(bound):
		return false
	}
}

// handle serves one connection: a reader that turns requests into raft
// proposals or immediate answers, and a writer that answers in request
// order, flushing whenever it has caught up (writeReplies). Publish frames
// go to the Publish half (publish.go); every other request to dispatch.
// Until its first request a connection holds only its read buffer and this
// goroutine, so idle connections cost little; frames are read within the
// time bounds of ClientLimits (frameReader).
func (cs *clientServer) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	cs.metrics.connections.Add(1)
	defer cs.metrics.connections.Add(-1)
	c := wire.NewConn(nc, cs.maxFrame)
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: cs.name, Group: cs.group}, cs.token); err != nil {
		if errors.Is(err, wire.ErrUnauthorized) {
			cs.metrics.refused(refusedUnauthorized)
			cs.log.Warn("refused a client without the deployment's token", "remote", nc.RemoteAddr(), "err", err)
		} else {
			cs.log.Debug("client handshake failed", "remote", nc.RemoteAddr(), "err", err)
		}
		return
	}
	_ = nc.SetDeadline(time.Time{})
	rd := &frameReader{c: c, idle: cs.limits.IdleTimeout, frame: cs.limits.FrameTimeout, last: time.Now()}
	m, err := rd.read()
	if err != nil && wire.IsFatal(err) && !errors.Is(err, wire.ErrFrameTooLarge) {
		cs.closing(nc, err) // gone, silent or too slow: nothing to answer
		return
	}
	rd.handedOver()
	cs.serveConn(ctx, nc, rd, frame{m: m, err: err})
}

// serveConn serves a handshaken connection from its first frame on.
func (cs *clientServer) serveConn(ctx context.Context, nc net.Conn, rd *frameReader, first frame) {
	c := rd.c
	replies := make(chan reply, pendingReplies)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		cs.writeReplies(c, replies)
	}()
	conn := &connState{sessions: map[string]string{}}
	connCtx, cancel := context.WithCancel(ctx)
	var subs sync.WaitGroup
	defer func() {
		cancel()
		close(replies)
		<-writerDone // answers owed are flushed first
		nc.Close()   // unblocks subscriptions stuck writing
		subs.Wait()
	}()
	frames := make(chan frame, readAhead)
	go readFrames(connCtx, rd, frames)
	slots := newWindow()
	next := &first // read but not yet handled
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
				cs.metrics.refused(refusedTooLarge)
				replies <- reply{msg: &wire.Error{Code: wire.CodeTooLarge, Message: err.Error() + "; closing the connection"}}
			}
			if wire.IsFatal(err) {
				cs.closing(nc, err)
				return
			}
			code, reason := wire.CodeBadRequest, refusedMalformed
			if errors.Is(err, wire.ErrUnknownType) {
				code, reason = wire.CodeUnknown, refusedUnknownType
			}
			cs.metrics.refused(reason)
			replies <- reply{msg: &wire.Error{Code: code, Message: err.Error()}}
			continue
		}
		switch m := m.(type) {
		case *wire.Publish:
			if err := checkPayloads(m); err != nil {
				cs.metrics.refused(refusedTooLarge)
				replies <- reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeTooLarge, Message: err.Error()}}
				continue
			}
			var ok bool
			if next, ok = cs.publish(connCtx, m, frames, conn, slots, replies); !ok {
				return
			}
		case *wire.Shutdown:
			replies <- cs.shutdown(m, nc)
		case *wire.MemberMove:
			replies <- cs.memberMove(connCtx, m, nc, conn) // members_move.go
		case *wire.Subscribe:
			if rep, ok := cs.checkSubscribe(m); !ok {
				replies <- rep
				continue
			}
			subs.Add(1)
			rd.subscribed.Add(1) // the idle bound is waived while it runs
			go func() {
				defer subs.Done()
				defer rd.subscribed.Add(-1)
				cs.subscribe(connCtx, c, m)
			}()
		case *wire.KeepAlive:
			cs.keepAlive(m, conn)
		case *wire.RegisterSource:
			cs.registerSource(connCtx, c, m, conn, &subs, replies)
		default:
			replies <- cs.dispatch(connCtx, m, conn)
		}
	}
}

// frame is one read from a client connection: a message or the error that
// ended or spoiled the read.
type frame struct {
	m   wire.Message
	err error
}

// readFrames decodes frames from rd until a fatal error, which it delivers
// last. It stops early when ctx ends. It closes out when it returns.
func readFrames(ctx context.Context, rd *frameReader, out chan<- frame) {
	defer close(out)
	for {
		m, err := rd.read()
		select {
		case out <- frame{m: m, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil && wire.IsFatal(err) {
			return
		}
		rd.handedOver()
	}
}

// connState is what the server remembers about one client connection.
type connState struct {
	// sessions maps a source to the session that registered it on this
	// connection: only then may the connection publish it (publish.go) and
	// speak for that session (keepAlive).
	sessions map[string]string
	// delivery: the sources whose receivers' positions are pushed on this
	// connection (receiver_server.go).
	delivery map[string]bool
	// move: the challenge a MemberMove was answered with (members_move.go).
	move *moveChallenge
	// intragroup: the intragroup behaviour each source registered on this
	// connection gets (intragroup.go).
	intragroup map[string]quorum.Intragroup
}

// dispatch handles one request other than Publish, Shutdown, Subscribe and
// KeepAlive.
func (cs *clientServer) dispatch(ctx context.Context, m wire.Message, conn *connState) reply {
	switch m := m.(type) {
	case *wire.Ping:
		if cs.pong == nil {
			return reply{msg: &wire.Pong{ReqID: m.ReqID, Store: cs.name, Group: cs.group, Leading: cs.isLeader()}}
		}
		return reply{msg: cs.pong(m.ReqID)}
	case *wire.RangeDigest:
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		return reply{msg: cs.rangeDigest(m)}
	case *wire.Probe:
		st := cs.status()
		rep := &wire.ProbeReply{ReqID: m.ReqID, Store: st.Name, Group: st.Group, GroupID: st.GroupID, HasState: st.HasState, State: st.State,
			AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LastTerm: st.LastTerm, CatchingUp: st.CatchingUp}
		if l, ok := cs.leader(); ok {
			rep.Leader = l.ClientAddr
		}
		if peers, err := cs.repo.PeerGroups(); err == nil {
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
		expired, err := cs.sessions.claim(m.Source, m.Session, time.Now(), cs.activityTimeout)
		if err != nil {
			code := wire.CodeBusy
			if errors.Is(err, errFenced) {
				code = wire.CodeFenced
			}
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: code, Message: err.Error()}}
		}
		if expired != "" {
			cs.expire(m.Source, expired, takeoverReason(m.Session, expired))
		}
		conn.sessions[m.Source] = m.Session
		intragroup, _ := cs.setIntragroup(conn, m.Source, "")
		cmd := repository.EncodeRegister(repository.Register{Source: m.Source, Session: m.Session, UnixNano: wallclock.Now().UnixNano()})
		return reply{req: m, future: cs.proposer.Propose(cmd), intragroup: intragroup}
	case *wire.Fetch:
		if err := checkSource(m.Source); err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
		}
		if m.Local {
			return reply{msg: cs.fetch(ctx, m)} // from this store's own files, leader or not
		}
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		return reply{msg: cs.fetch(ctx, m)}
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
		cmd := repository.EncodeConsumed(repository.Consumed{Source: m.Source, Receiver: m.Receiver, Seq: m.Seq, UnixNano: wallclock.Now().UnixNano()})
		return reply{req: m, future: cs.proposer.Propose(cmd)}
	case *wire.Members:
		if cs.members == nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "this store does not tell its members' addresses"}}
		}
		return reply{msg: cs.members.members(m.ReqID)}
	case *wire.RegisterReceiver:
		return cs.registerReceiver(m)
	case *wire.ConsumedAs:
		return cs.consumedAs(m)
	case *wire.ReceiverQuery:
		return cs.receiverQuery(m)
	default:
		return reply{msg: &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("a store does not accept frame type %d from clients", m.Type())}}
	}
}

// notLeader returns (redirect, false) unless this store leads its group and
// has applied everything committed before its term.
func (cs *clientServer) notLeader(reqID uint64) (reply, bool) {
	if cs.isLeader() {
		return reply{}, true
	}
	return reply{msg: cs.redirect(reqID)}, false
}

// redirect tells the client where the leader is, if this store knows.
func (cs *clientServer) redirect(reqID uint64) *wire.NotLeader {
	nl := &wire.NotLeader{ReqID: reqID}
	if l, ok := cs.leader(); ok && l.Name != cs.name {
		nl.Leader, nl.LeaderName = l.ClientAddr, l.Name
	}
	return nl
}

// fetch answers m from this store's repository. A message damaged at rest
// is never served: an intact copy from another member or group takes its
// place, or it is absent (not held here). Only the leader looks for copies
// at once; a Local fetch is another member looking for its own copies, and
// this store looks for its own in the background.
func (cs *clientServer) fetch(ctx context.Context, m *wire.Fetch) wire.Message {
	info, ok, err := cs.repo.Source(m.Source)
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
	bytes = min(bytes, cs.maxFrame/2)
	to := min(m.To, info.HighSeq)
	msgs, err := cs.damage.read(ctx, m.Source, m.From, to, count, bytes, !m.Local)
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

// shutdown stops the store cleanly at an operator's request, answering
// first. Who may ask: with an operator token, a request carrying it; else,
// with a client token, any client (the handshake checked the token); with
// neither, a client on loopback.
func (cs *clientServer) shutdown(m *wire.Shutdown, nc net.Conn) reply {
	if why := cs.mayStop(m, nc.RemoteAddr()); why != "" {
		cs.metrics.refused(refusedUnauthorized)
		cs.log.Warn("refused to stop at a client's request", "remote", nc.RemoteAddr(), "why", why)
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeAuth, Message: why}}
	}
	cs.log.Info("stopping at an operator's request", "remote", nc.RemoteAddr())
	go func() {
		time.Sleep(100 * time.Millisecond) // let the answer go out
		cs.stop()
	}()
	return reply{msg: &wire.OK{ReqID: m.ReqID}}
}

// mayStop says why m may not stop the store, or "" if it may.
func (cs *clientServer) mayStop(m *wire.Shutdown, remote net.Addr) string {
	switch {
	case cs.operatorToken != "":
		if subtle.ConstantTimeCompare([]byte(m.Token), []byte(cs.operatorToken)) != 1 {
			return "stopping a store needs the deployment's operator token (security.operator-token-file); umstored stop sends it from the deployment file, or from --operator-token-file"
		}
	case cs.token != "":
		// The handshake checked the client token.
	default:
		if ta, ok := remote.(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			return "this deployment has no operator or client token, so only a client on loopback may stop a store: run umstored stop on the store's host, or give the deployment a security.operator-token-file"
		}
	}
	return ""
}

// keepAlive records that a publisher is alive, or frees its source when it
// says goodbye. Only the connection that registered the source for that
// session speaks for it: anyone else's keep-alive or goodbye is ignored, so
// a stranger can neither keep a dead publisher's source held nor free a live
// one's.
func (cs *clientServer) keepAlive(m *wire.KeepAlive, conn *connState) {
	if !cs.isLeader() || conn.sessions[m.Source] != m.Session || m.Session == "" {
		return
	}
	if !m.Leaving {
		cs.sessions.touch(m.Source, m.Session, time.Now())
		return
	}
	go cs.expire(m.Source, m.Session, "its publisher closed")
}

func (cs *clientServer) sources(m *wire.Sources) wire.Message {
	infos, err := cs.repo.Sources()
	if err != nil {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}
	}
	rep := &wire.SourceList{ReqID: m.ReqID, Group: cs.group, GroupID: cs.repo.GroupID(), Sources: make([]wire.SourceState, len(infos))}
	for i, in := range infos {
		st := wire.SourceState{Name: in.Name, HighSeq: in.HighSeq, LowSeq: in.LowSeq, Count: in.Count}
		for _, g := range in.Gaps {
			st.Gaps = append(st.Gaps, wire.Range{From: g.From, To: g.To})
		}
		rep.Sources[i] = st
	}
	return rep
}

func reqIDOf(m wire.Message) uint64 {
	switch m := m.(type) {
	case *wire.Register:
		return m.ReqID
	case *wire.Publish:
		return m.ReqID
	case *wire.Consumed:
		return m.ReqID
	case *wire.RegisterReceiver:
		return m.ReqID
	case *wire.ConsumedAs:
		return m.ReqID
	case *wire.RegisterSource:
		return m.ReqID
	}
	return 0
}

// checkSource refuses a source name that is not 1 to maxSourceName bytes
// of printable UTF-8 (wire.CheckSourceName): such a name could not be held,
// or would be unsafe to print in status output and logs.
func checkSource(name string) error {
	return wire.CheckSourceName(name)
}
