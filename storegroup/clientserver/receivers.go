package clientserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/wire"
)

// The receiver half of a client connection: named receivers register
// (RegisterReceiver), acknowledge what they consumed (ConsumedAs, also their
// keep-alive) and are reported (ReceiverQuery); publishers register with the
// options of receiver-paced persistence and confirmed delivery
// (RegisterSource) and are pushed their receivers' positions (Delivery).
//
// Who may speak for a receiver name. The leader holds, in memory, which
// session holds each name (Receivers): a registration is refused
// (CodeBusy) while another session was heard from within
// ReceiverActivityTimeout, and an acknowledgement is taken only from the
// session holding the name (CodeNotRegistered tells a receiver whose name
// was expired to register again). Positions only move forward, so a stale
// acknowledgement could not move one back anyway.

// checkReceiverNames refuses a source or receiver name that is not 1 to
// maxSourceName bytes of printable UTF-8, and an empty session.
func checkReceiverNames(source, receiver, session string) error {
	if err := checkSource(source); err != nil {
		return err
	}
	if err := wire.CheckSourceName(receiver); err != nil {
		return fmt.Errorf("receiver name: %w", err)
	}
	if session == "" {
		return errors.New("a receiver's session is empty")
	}
	return nil
}

func badRequest(reqID uint64, err error) reply {
	return reply{msg: &wire.Error{ReqID: reqID, Code: wire.CodeBadRequest, Message: err.Error()}}
}

// receiverName is a receiver's name within its source.
type receiverName struct{ source, receiver string }

// registerReceiver claims the name for the session, within conn's and the
// store's limits on receivers (a name conn registered already is not
// counted again), and
// records the registration through the log; the answer
// (receiverRegistered) carries the receiver's position.
func (cs *Server) registerReceiver(m *wire.RegisterReceiver, conn *connState) reply {
	if err := checkReceiverNames(m.Source, m.Receiver, m.Session); err != nil {
		return badRequest(m.ReqID, err)
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		return rep
	}
	name := receiverName{m.Source, m.Receiver}
	_, held := conn.receivers[name]
	if !held {
		if len(conn.receivers) >= cs.Limits.MaxReceiversPerConn {
			return reply{msg: cs.overLimit(m.ReqID, refusedReceiverLimit, cs.connReceiversMessage())}
		}
		if !cs.receivers.take() {
			return reply{msg: cs.overLimit(m.ReqID, refusedReceiverLimit, cs.storeReceiversMessage())}
		}
	}
	cs.owners.mu.Lock() // an anonymous Consumed is proposed before the claim, or sees it (receivers_owned.go)
	err := cs.Receivers.Claim(m.Source, m.Receiver, m.Session, time.Now(), cs.ReceiverTimeout)
	cs.owners.mu.Unlock()
	if err != nil {
		if !held {
			cs.receivers.give(1)
		}
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBusy, Message: err.Error()}}
	}
	if conn.receivers == nil {
		conn.receivers = map[receiverName]string{}
	}
	conn.receivers[name] = m.Session
	if _, known, err := cs.Repo.Source(m.Source); err != nil {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}}
	} else if !known {
		// Nothing to record in a group that never saw the source: the name
		// is held in memory, and the receiver starts where it is told.
		return reply{msg: &wire.ReceiverRegistered{ReqID: m.ReqID, Source: m.Source, Receiver: m.Receiver, Group: cs.Group, GroupID: cs.Repo.GroupID()}}
	}
	cmd := repository.EncodeRegisterReceiver(repository.RegisterReceiver{Source: m.Source, Receiver: m.Receiver, Session: m.Session, Paced: m.Paced, UnixNano: wallclock.Now().UnixNano()})
	return reply{req: m, future: cs.Proposer.Propose(cmd)}
}

// receiverRegistered turns a RegisterReceiver's result into the answer.
func (cs *Server) receiverRegistered(req wire.Message, r *repository.ReceiverResult) wire.Message {
	rep := &wire.ReceiverRegistered{ReqID: reqIDOf(req), Source: r.Source, Receiver: r.Receiver, Group: cs.Group, GroupID: cs.Repo.GroupID(),
		Known: true, Recorded: !r.Created, Consumed: r.Seq}
	if info, ok, err := cs.Repo.Source(r.Source); err == nil && ok {
		rep.HighSeq, rep.LowSeq = info.HighSeq, info.LowSeq
	}
	if st, err := cs.Repo.Pacing(r.Source); err == nil {
		rep.Pacing = PacingName(st.Mode)
	}
	return rep
}

// consumedAs takes a receiver's acknowledgement (or keep-alive, or
// goodbye): from the session holding the name only, proposing a Consumed
// only when the position moves forward. A goodbye from the session that
// registered the name on conn gives its place back (MaxReceiversPerConn).
func (cs *Server) consumedAs(m *wire.ConsumedAs, conn *connState) reply {
	if err := checkReceiverNames(m.Source, m.Receiver, m.Session); err != nil {
		return badRequest(m.ReqID, err)
	}
	if name := (receiverName{m.Source, m.Receiver}); m.Leaving && conn.receivers[name] == m.Session {
		delete(conn.receivers, name)
		cs.receivers.give(1)
	}
	if m.Seq > wire.MaxSeq {
		return badRequest(m.ReqID, fmt.Errorf("position %d is above %d, the highest sequence number a source can have", m.Seq, uint64(wire.MaxSeq)))
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		return rep
	}
	switch cs.Receivers.Touch(m.Source, m.Receiver, m.Session, time.Now()) {
	case HeldByOther:
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBusy,
			Message: fmt.Sprintf("receiver name %q of source %q is held by another receiver: this one was expired and its name taken over", m.Receiver, m.Source)}}
	case HeldByNobody:
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeNotRegistered,
			Message: fmt.Sprintf("register receiver %q of source %q first (it was expired, closed, or registered with another leader)", m.Receiver, m.Source)}}
	}
	if m.Leaving {
		defer cs.Receivers.Leave(m.Source, m.Receiver, m.Session)
	}
	if m.Seq == 0 {
		return reply{msg: &wire.OK{ReqID: m.ReqID}}
	}
	pos, known, found, err := cs.Repo.Receiver(m.Source, m.Receiver)
	if err != nil {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}}
	}
	if known && !found {
		// The name was registered while the group did not hold the source,
		// so no record names its session: registering again writes one,
		// and only then is its position recorded as owned.
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeNotRegistered,
			Message: fmt.Sprintf("register receiver %q of source %q again: the group holds the source now, and records a position only for a registration it recorded", m.Receiver, m.Source)}}
	}
	if !known || m.Seq <= pos.Seq {
		return reply{msg: &wire.OK{ReqID: m.ReqID}} // nothing new to record
	}
	cmd := repository.EncodeConsumed(repository.Consumed{Source: m.Source, Receiver: m.Receiver, Seq: m.Seq, UnixNano: wallclock.Now().UnixNano()})
	return reply{req: m, future: cs.Proposer.Propose(cmd)}
}

// receiverQuery answers from this store's own repository, leader or not.
func (cs *Server) receiverQuery(m *wire.ReceiverQuery) reply {
	if m.Source != "" {
		if err := checkSource(m.Source); err != nil {
			return badRequest(m.ReqID, err)
		}
	}
	rep := &wire.ReceiverReport{ReqID: m.ReqID, Store: cs.Name, Group: cs.Group, Leader: cs.IsLeader(), AppliedIndex: cs.Repo.AppliedIndex()}
	var names []string
	if m.Source != "" {
		names = []string{m.Source}
	} else {
		infos, err := cs.Repo.Sources()
		if err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}}
		}
		for _, in := range infos {
			names = append(names, in.Name)
		}
	}
	for _, name := range names {
		sr, ok := cs.sourceReceivers(name, m.Receiver, rep.Leader)
		if ok {
			rep.Sources = append(rep.Sources, sr)
		}
	}
	return reply{msg: rep}
}

// sourceReceivers is what this store records about the receivers of
// source (only receiver, if not ""); ok is false if it does not hold the
// source.
func (cs *Server) sourceReceivers(source, receiver string, leader bool) (wire.SourceReceivers, bool) {
	info, known, err := cs.Repo.Source(source)
	if err != nil || !known {
		return wire.SourceReceivers{}, false
	}
	sr := wire.SourceReceivers{Source: source, HighSeq: info.HighSeq, Receivers: []wire.ReceiverState{}}
	if st, err := cs.Repo.Pacing(source); err == nil {
		sr.Pacing = PacingName(st.Mode)
	}
	rs, err := cs.Repo.Receivers(source)
	if err != nil {
		return sr, true
	}
	for _, r := range rs {
		if receiver != "" && r.Receiver != receiver {
			continue
		}
		sr.Receivers = append(sr.Receivers, cs.receiverState(source, r, leader))
	}
	return sr, true
}

// receiverState describes one recorded receiver; a leader knows when it
// last heard from it, any store when the log last recorded it.
func (cs *Server) receiverState(source string, r repository.ReceiverPosition, leader bool) wire.ReceiverState {
	st := wire.ReceiverState{Name: r.Receiver, Consumed: r.Seq, Paced: r.Paced, Active: r.Active,
		LastActivityUnixNano: max(r.RegisteredUnixNano, r.UnixNano)}
	if leader {
		if last, ok := cs.Receivers.LastHeard(source, r.Receiver); ok {
			st.LastActivityUnixNano = max(st.LastActivityUnixNano, last.UnixNano())
		}
	}
	return st
}

// PacingName is the wire name of a pacing mode.
func PacingName(p repository.Pacing) string {
	switch p {
	case repository.PacingBlocking:
		return wire.PacingBlocking
	case repository.PacingNonBlocking:
		return wire.PacingNonBlocking
	}
	return wire.PacingNone
}

// parsePacing reads a pacing mode as a publisher names it.
func parsePacing(s string) (repository.Pacing, error) {
	switch strings.ToLower(s) {
	case wire.PacingNone, "none":
		return repository.PacingNone, nil
	case wire.PacingBlocking:
		return repository.PacingBlocking, nil
	case wire.PacingNonBlocking:
		return repository.PacingNonBlocking, nil
	}
	return 0, fmt.Errorf("receiver-paced persistence %q: want blocking or non-blocking", s)
}

// registerSource is Register with receiver-paced persistence and confirmed
// delivery: it claims the source for the session on this connection as
// Register does, records the pacing through the log (RegisterPaced), and,
// with Delivery, starts pushing the source's receivers' positions on the
// connection until it closes.
func (cs *Server) registerSource(ctx context.Context, c *wire.Conn, m *wire.RegisterSource, conn *connState, subs *sync.WaitGroup, replies *replyQueue) {
	if err := checkSource(m.Source); err != nil {
		replies.put(badRequest(m.ReqID, err))
		return
	}
	mode, err := parsePacing(m.Pacing)
	if err != nil {
		replies.put(badRequest(m.ReqID, err))
		return
	}
	if mode != repository.PacingNone && !cs.AllowPaced {
		replies.put(badRequest(m.ReqID, fmt.Errorf("store %s does not allow receiver-paced persistence: start umstored with --allow-receiver-paced-persistence (UM repository-allow-receiver-paced-persistence), or publish without it", cs.Name)))
		return
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		replies.put(rep)
		return
	}
	b, err := cs.intragroupFor(m.Intragroup)
	if err != nil {
		replies.put(badRequest(m.ReqID, err))
		return
	}
	if e := cs.membersDown(m.ReqID, b); e != nil {
		replies.put(reply{msg: e})
		return
	}
	intragroup, _ := cs.setIntragroup(conn, m.Source, m.Intragroup)
	if e := cs.claimSource(conn, m.ReqID, m.Source, m.Session); e != nil {
		if _, held := conn.sessions[m.Source]; !held {
			delete(conn.intragroup, m.Source) // nothing kept of a refused source
		}
		replies.put(reply{msg: e})
		return
	}
	reg := repository.Register{Source: m.Source, Session: m.Session, UnixNano: wallclock.Now().UnixNano()}
	cmd := repository.EncodeRegister(reg)
	current := repository.PacingNone
	if st, err := cs.Repo.Pacing(m.Source); err == nil {
		current = st.Mode
	}
	if mode != repository.PacingNone || current != repository.PacingNone {
		cmd = repository.EncodeRegisterPaced(repository.RegisterPaced{Register: reg, Pacing: mode})
	}
	cs.Pacer.set(m.Source, mode)
	replies.put(reply{req: m, future: cs.Proposer.Propose(cmd), intragroup: intragroup})
	if m.Delivery && !conn.delivery[m.Source] {
		if conn.delivery == nil {
			conn.delivery = map[string]bool{}
		}
		conn.delivery[m.Source] = true
		subs.Add(1)
		go func() {
			defer subs.Done()
			cs.pushDelivery(ctx, c, m.Source)
		}()
	}
}

// deliveryInterval bounds how often a publisher is told of its receivers'
// positions: they move at most once per receiver acknowledgement interval.
const deliveryInterval = 100 * time.Millisecond

// pushDelivery sends the publisher on c the positions of source's named
// receivers whenever they change, while this store leads and the
// connection lasts.
func (cs *Server) pushDelivery(ctx context.Context, c *wire.Conn, source string) {
	var last string
	for ctx.Err() == nil && cs.IsLeader() {
		applied := cs.NextApplied()
		rs, err := cs.Repo.Receivers(source)
		if err == nil {
			d := &wire.Delivery{Source: source, Receivers: []wire.ReceiverState{}}
			var b strings.Builder
			for _, r := range rs {
				if r.Seq == 0 {
					continue
				}
				d.Receivers = append(d.Receivers, wire.ReceiverState{Name: r.Receiver, Consumed: r.Seq, Paced: r.Paced, Active: r.Active})
				fmt.Fprintf(&b, "%s=%d;", r.Receiver, r.Seq)
			}
			if b.String() != last && len(d.Receivers) > 0 {
				if err := c.Send(d); err != nil {
					return
				}
				last = b.String()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-applied:
		case <-time.After(time.Second):
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(deliveryInterval):
		}
	}
}
