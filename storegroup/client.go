package storegroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"umstore/quorum"
	"umstore/repository"
	"umstore/storegroup/clientserver"
	"umstore/storegroup/raftport"
	"umstore/wire"
)

// The client server (package clientserver) speaks the wire protocol to
// publishers, receivers and other stores. This file is what the store gives
// it, in one place: clientserver.Deps, built once the storage is final, and
// the adapters from the store's own state (sessions, receiver sessions, the
// members' logs, the member desk) to the narrow interfaces the server asks.

// ClientLimits bounds what clients may hold of a store (clientserver.Limits).
type ClientLimits = clientserver.Limits

// DefaultClientLimits returns the default limits for this process (see
// ClientLimits).
func DefaultClientLimits() ClientLimits { return clientserver.DefaultLimits() }

// memberRunningHeartbeats is how many heartbeat timeouts of silence make a
// member not running, for intragroup all-active. raft heartbeats every
// tenth of the timeout, so a running member is heard from many times in
// the window.
const memberRunningHeartbeats = 3

// newClient builds the client server and its listener.
func (s *Store) newClient() (*clientserver.Server, error) {
	cfg := s.cfg
	return clientserver.New(cfg.self().ClientAddr, cfg.Security.ServerTLS, clientserver.Deps{
		Name:            cfg.Name,
		Group:           cfg.Group,
		MaxFrame:        cfg.MaxFrame,
		Token:           cfg.Security.Token,
		OperatorToken:   cfg.Security.OperatorToken,
		Identities:      cfg.Security.Clients,
		ActivityTimeout: cfg.SourceActivityTimeout,
		Limits:          cfg.ClientLimits,
		Log:             s.log,
		Metrics:         s.metrics.client,
		Stages:          s.metrics.stages,
		Repo:            s.repo,
		Proposer:        s.proposer,
		Read:            s.repair.damage.read, // repair_damage.go: damaged messages are never served
		ClaimSource:     s.claimSource,
		TouchSource:     s.sessions.touch,
		PeerHigh:        s.repair.peerHighest, // repair.go: the other groups, as the last pass saw them
		Receivers:       clientReceivers{s.receivers},
		ReceiverTimeout: cfg.ReceiverActivityTimeout,
		AllowPaced:      cfg.AllowReceiverPacedPersistence,
		Pacer:           s.pacer,
		Intragroup:      s.intragroupDeps(),
		IsLeader:        s.IsLeader,
		Leader:          s.clientLeader,
		LeaderlessFor:   s.leaderlessFor,
		Status:          s.clientStatus,
		NextApplied:     s.appliedSignal,
		Expire:          s.proposeExpiry,
		Stop:            s.Close,
		Pong:            s.pong,
		Snapshot:        s.backupSnapshot,
		Members:         clientDesk{s.memberDesk()}, // members_move.go
		Conflicts:       s.repair.conflict.count,    // repair_conflicts.go
	})
}

// claimSource lets session register on source (sessions.claim), first
// freeing the source through the log from the session it takes over from,
// if any.
func (s *Store) claimSource(source, session string, now time.Time, timeout time.Duration) error {
	limit := cmp.Or(s.cfg.ClientLimits.MaxSessions, DefaultClientLimits().MaxSessions)
	expired, err := s.sessions.claim(source, session, now, timeout, limit)
	if errors.Is(err, errSessionLimit) {
		return clientserver.OverLimit(fmt.Sprintf("store %s already holds %d sources for publisher sessions (limit MaxSessions of its client limits, umstored --max-sessions), counting those whose connections closed without a goodbye until %v of silence expires them: close sources you no longer use (KeepAlive Leaving), retry later, or raise the limit",
			s.cfg.Name, limit, timeout))
	}
	if err != nil {
		return err
	}
	if expired != "" {
		s.proposeExpiry(source, expired, takeoverReason(session, expired))
	}
	return nil
}

// clientLeader is the current leader, for redirects.
func (s *Store) clientLeader() (clientserver.Member, bool) {
	l, ok := s.leader()
	return clientserver.Member{Name: l.Name, ClientAddr: l.ClientAddr}, ok
}

// clientStatus is what a Probe answers of the store's status.
func (s *Store) clientStatus() clientserver.Status {
	st := s.statusCore()
	return clientserver.Status{Name: st.Name, Group: st.Group, GroupID: st.GroupID, HasState: st.HasState, State: st.State,
		AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LastTerm: st.LastTerm, CatchingUp: st.CatchingUp,
		LastStop: st.LastStop, CatchUpTarget: st.CatchUpTarget, CatchUpBytes: st.CatchUpBytes}
}

// appliedSignal returns a channel closed at the next applied batch.
func (s *Store) appliedSignal() <-chan struct{} {
	s.appliedMu.Lock()
	defer s.appliedMu.Unlock()
	return s.appliedCh
}

// notifyApplied wakes everyone waiting for new entries (subscriptions).
func (s *Store) notifyApplied() {
	s.appliedMu.Lock()
	close(s.appliedCh)
	s.appliedCh = make(chan struct{})
	s.appliedMu.Unlock()
}

// intragroupDeps records the members' answers on the store's transport and
// returns what the client server needs to wait for them. It runs before
// raft starts.
func (s *Store) intragroupDeps() clientserver.Intragroup {
	mp := raftport.NewProgress()
	s.port.RecordAnswers(mp)
	logs := &memberLogs{
		progress: mp,
		window:   memberRunningHeartbeats * s.cfg.HeartbeatTimeout,
		term: func() uint64 {
			if r := s.raftNode(); r != nil {
				return r.CurrentTerm()
			}
			return 0
		},
	}
	for _, m := range s.cfg.Members {
		if m.Name != s.cfg.Name {
			logs.others = append(logs.others, m.Name)
		}
	}
	return clientserver.Intragroup{Floor: s.cfg.Intragroup, Members: logs}
}

// memberLogs is what the client server's intragroup waits read of the
// members' logs (package raftport's progress.go).
type memberLogs struct {
	progress *raftport.Progress // what the members' answers said
	others   []string           // the other members' names
	window   time.Duration      // a member is running while heard from within it
	term     func() uint64      // the raft node's current term; 0 before it runs
}

// Changed implements clientserver.MemberLogs.
func (l *memberLogs) Changed() <-chan struct{} { return l.progress.Changed() }

// Held implements clientserver.MemberLogs.
func (l *memberLogs) Held(b quorum.Intragroup, index uint64, now time.Time) (bool, []clientserver.MemberView) {
	views := l.progress.View(l.others, l.term(), index, now, l.window)
	out := make([]clientserver.MemberView, len(views))
	for i, v := range views {
		out[i] = clientserver.MemberView{Name: v.Name, Running: v.Running, Holds: v.Holds, Quiet: v.Quiet}
	}
	return raftport.Met(b, views), out
}

// clientReceivers gives the client server the leader's receiver sessions
// (receivers.go).
type clientReceivers struct{ rs *receiverSessions }

func (c clientReceivers) Claim(source, receiver, session string, now time.Time, timeout time.Duration) error {
	return c.rs.claim(receiverKey{source, receiver}, session, now, timeout)
}

func (c clientReceivers) Touch(source, receiver, session string, now time.Time) clientserver.Holder {
	switch c.rs.touch(receiverKey{source, receiver}, session, now) {
	case heldByIt:
		return clientserver.HeldByIt
	case heldByOther:
		return clientserver.HeldByOther
	}
	return clientserver.HeldByNobody
}

func (c clientReceivers) Leave(source, receiver, session string) {
	c.rs.leave(receiverKey{source, receiver}, session)
}

func (c clientReceivers) LastHeard(source, receiver string) (time.Time, bool) {
	return c.rs.lastHeard(receiverKey{source, receiver})
}

// clientDesk gives the client server the store's member desk
// (members_move.go).
type clientDesk struct{ d *memberDesk }

func (c clientDesk) Members(reqID uint64) *wire.MemberList { return c.d.members(reqID) }

func (c clientDesk) Move(ctx context.Context, m *wire.MemberMove, nc net.Conn, challenge *any) wire.Message {
	pending, _ := (*challenge).(*moveChallenge)
	rep := c.d.move(ctx, m, nc, &pending)
	if pending == nil {
		*challenge = nil
	} else {
		*challenge = pending
	}
	return rep
}

// backupSnapshot is a consistent copy of the repository for an operator's
// backup: what is applied is made durable first, and a message damaged in
// this store's files is sent as an intact copy from another store, as for a
// snapshot sent to a member.
func (s *Store) backupSnapshot() (*repository.Snapshot, error) {
	if err := s.fsm.flush(); err != nil {
		return nil, err
	}
	snap, err := s.repo.Snapshot()
	if err != nil {
		return nil, err
	}
	if s.repair != nil && s.repair.damage != nil {
		snap.UseCopies(s.repair.damage.copyForSnapshot)
	}
	return snap, nil
}
