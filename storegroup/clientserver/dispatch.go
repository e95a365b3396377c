package clientserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/wire"
)

// dispatch handles one request other than Publish, Shutdown, Subscribe and
// KeepAlive.
func (cs *Server) dispatch(ctx context.Context, m wire.Message, conn *connState) reply {
	switch m := m.(type) {
	case *wire.Ping:
		if cs.Pong == nil {
			return reply{msg: &wire.Pong{ReqID: m.ReqID, Store: cs.Name, Group: cs.Group, Leading: cs.IsLeader()}}
		}
		return reply{msg: cs.Pong(m.ReqID)}
	case *wire.RangeDigest:
		if rep, ok := cs.notLeader(m.ReqID); !ok {
			return rep
		}
		cs.settled(ctx)
		return reply{msg: cs.rangeDigest(m)}
	case *wire.Probe:
		return reply{msg: cs.probe(m)}
	case *wire.Register:
		return cs.register(m, conn)
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
		cs.settled(ctx)
		return reply{msg: cs.sources(m, conn.who)}
	case *wire.Consumed:
		return cs.anonymousConsumed(m) // receivers_owned.go
	case *wire.Members:
		if cs.Members == nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "this store does not tell its members' addresses"}}
		}
		return reply{msg: cs.Members.Members(m.ReqID)}
	case *wire.RegisterReceiver:
		return cs.registerReceiver(m, conn)
	case *wire.ConsumedAs:
		return cs.consumedAs(m, conn)
	case *wire.ReceiverQuery:
		return cs.receiverQuery(m)
	default:
		return reply{msg: &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("a store does not accept frame type %d from clients", m.Type())}}
	}
}

// notLeader returns (redirect, false) unless this store leads its group and
// has applied everything committed before its term.
func (cs *Server) notLeader(reqID uint64) (reply, bool) {
	if cs.IsLeader() {
		return reply{}, true
	}
	return reply{msg: cs.redirect(reqID)}, false
}

// redirect tells the client where the leader is, if this store knows.
func (cs *Server) redirect(reqID uint64) *wire.NotLeader {
	nl := &wire.NotLeader{ReqID: reqID}
	l, ok := cs.Leader()
	switch {
	case ok && l.Name != cs.Name:
		nl.Leader, nl.LeaderName = l.ClientAddr, l.Name
	case !ok && cs.LeaderlessFor != nil:
		nl.NoLeaderMS = uint64(cs.LeaderlessFor().Milliseconds())
	}
	return nl
}

// keepAlive records that a publisher is alive, or frees its source when it
// says goodbye. Only the connection that registered the source for that
// session speaks for it: anyone else's keep-alive or goodbye is ignored, so
// a stranger can neither keep a dead publisher's source held nor free a live
// one's. A goodbye also ends the registration on this connection, giving
// its place back (MaxSourcesPerConn, MaxSources): a Publish of the source
// on it must register again.
func (cs *Server) keepAlive(m *wire.KeepAlive, conn *connState) {
	if conn.sessions[m.Source] != m.Session || m.Session == "" {
		return
	}
	if m.Leaving {
		delete(conn.sessions, m.Source)
		delete(conn.intragroup, m.Source)
		delete(conn.published, m.Source)
		cs.registered.give(1)
	}
	if !cs.IsLeader() {
		return
	}
	if m.UnusedFrom != 0 {
		cs.recordUnusedKept(m)
	}
	if !m.Leaving {
		cs.TouchSource(m.Source, m.Session, time.Now())
		return
	}
	go cs.Expire(m.Source, m.Session, "its publisher closed")
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

// probe answers a Probe: what this store holds and knows, leader or not.
func (cs *Server) probe(m *wire.Probe) *wire.ProbeReply {
	st := cs.Status()
	rep := &wire.ProbeReply{ReqID: m.ReqID, Store: st.Name, Group: st.Group, GroupID: st.GroupID, HasState: st.HasState, State: st.State,
		AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LastTerm: st.LastTerm, CatchingUp: st.CatchingUp,
		LastStop: st.LastStop, CatchUpTarget: st.CatchUpTarget, CatchUpBytes: st.CatchUpBytes}
	if l, ok := cs.Leader(); ok {
		rep.Leader = l.ClientAddr
	}
	if peers, err := cs.Repo.PeerGroups(); err == nil {
		for idx, id := range peers {
			rep.KnownGroups = append(rep.KnownGroups, wire.GroupIdentity{Index: idx, GroupID: id})
		}
		sort.Slice(rep.KnownGroups, func(i, j int) bool { return rep.KnownGroups[i].Index < rep.KnownGroups[j].Index })
	}
	return rep
}

// register claims m's source for its session on this connection, and
// records the registration through the log.
func (cs *Server) register(m *wire.Register, conn *connState) reply {
	if err := checkSource(m.Source); err != nil {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		return rep
	}
	if e := cs.membersDown(m.ReqID, cs.Intragroup.Floor); e != nil {
		return reply{msg: e}
	}
	if e := cs.claimSource(conn, m.ReqID, m.Source, m.Session); e != nil {
		return reply{msg: e}
	}
	intragroup, _ := cs.setIntragroup(conn, m.Source, "")
	cmd := repository.EncodeRegister(repository.Register{Source: m.Source, Session: m.Session, UnixNano: wallclock.Now().UnixNano()})
	return reply{req: m, future: cs.Proposer.Propose(cmd), intragroup: intragroup}
}

// claimSource registers source for session on conn (Register and
// RegisterSource): within the connection's and the store's limits on
// sources (a source conn holds already is not counted again), and unless
// another live session holds it (ClaimSource). It returns the Error to
// answer, or nil once conn holds the source.
func (cs *Server) claimSource(conn *connState, reqID uint64, source, session string) *wire.Error {
	_, held := conn.sessions[source]
	if !held {
		if len(conn.sessions) >= cs.Limits.MaxSourcesPerConn {
			return cs.overLimit(reqID, refusedSourceLimit, cs.connSourcesMessage())
		}
		if !cs.registered.take() {
			return cs.overLimit(reqID, refusedSourceLimit, cs.storeSourcesMessage())
		}
	}
	if err := cs.ClaimSource(source, session, time.Now(), cs.ActivityTimeout); err != nil {
		if !held {
			cs.registered.give(1)
		}
		if errors.Is(err, ErrOverLimit) {
			return cs.overLimit(reqID, refusedSourceLimit, err.Error())
		}
		code := wire.CodeBusy
		switch {
		case errors.Is(err, ErrFenced):
			code = wire.CodeFenced
		case errors.Is(err, ErrEpochAhead):
			code = wire.CodeBadRequest
		}
		return &wire.Error{ReqID: reqID, Code: code, Message: err.Error()}
	}
	conn.sessions[source] = session
	return nil
}
