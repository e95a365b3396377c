package storegroup

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/wallclock"
	"umstore/repository"
)

// watchLeadership tracks whether this store leads, and on winning
// leadership waits until everything committed earlier is applied (a
// barrier) before serving reads, then gives a new group its identity.
// While it leads, it expires silent publishers and receivers and learns
// the other groups' identities; watchMembers (leadership.go), started here,
// moves leadership to the group's preferred host and compares policies.
func (s *Store) watchLeadership() {
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.watchMembers() }()
	r := s.raftNode()
	obs := make(chan raft.Observation, 16)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(o)
	defer r.DeregisterObserver(o)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var nextPeerCheck time.Time
	for {
		isLeader := r.State() == raft.Leader
		if !isLeader {
			s.leaderReady.Store(false)
		} else if !s.leaderReady.Load() {
			// The barrier waits for every earlier entry to be applied; the
			// commit makes them what the repository reads (fsm_commit.go).
			if err := r.Barrier(s.cfg.ApplyTimeout).Error(); err == nil && s.fsm.flush() == nil {
				s.sessions.reset(s.recordedOwners(), time.Now())
				s.receivers.reset(s.recordedReceivers(), time.Now())
				s.leaderReady.Store(true)
				s.log.Info("leading the group")
				s.ensureGroupID()
			}
		}
		if s.leaderReady.Load() {
			s.expireSilent(time.Now())
			s.expireSilentReceivers(time.Now())
		}
		if s.leaderReady.Load() && time.Now().After(nextPeerCheck) {
			if s.learnPeerGroups() {
				nextPeerCheck = time.Now().Add(10 * time.Second)
			} else {
				nextPeerCheck = time.Now().Add(2 * time.Second)
			}
		}
		select {
		case <-s.ctx.Done():
			return
		case <-obs:
		case <-tick.C:
		}
	}
}

// learnPeerGroups asks the stores of the other groups for their groups'
// identities and records new or changed ones through the log, so every
// store of this group remembers them (an empty group is never re-created
// while another group remembers it). It reports whether every other group's
// identity is now known.
func (s *Store) learnPeerGroups() bool {
	known, err := s.repo.PeerGroups()
	if err != nil {
		return false
	}
	all := true
	for _, g := range s.currentOtherGroups() {
		var id string
		for _, a := range s.probe(s.ctx, g.Members) {
			if a.err == nil && a.reply.GroupID != "" && a.reply.Group == g.Index {
				id = a.reply.GroupID
				break
			}
		}
		if id == "" {
			all = false
			continue
		}
		if known[g.Index] == id {
			continue
		}
		cmd := repository.EncodePeerGroup(repository.PeerGroup{Index: g.Index, GroupID: id, UnixNano: wallclock.Now().UnixNano()})
		if err := s.proposer.Propose(cmd).Error(); err != nil {
			all = false
			continue
		}
		s.log.Info("recorded another group's identity", "peer_group", g.Index, "peer_group_id", id)
	}
	return all
}

// ensureGroupID proposes the group's identity if the group has none yet.
// The repository keeps the first identity committed and refuses others, so
// two leaders racing here cannot give a group two identities.
func (s *Store) ensureGroupID() {
	if s.repo.GroupID() != "" {
		return
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		s.log.Error("cannot create a group identity", "err", err)
		return
	}
	id := hex.EncodeToString(b[:])
	cmd := repository.EncodeInitGroup(repository.InitGroup{GroupID: id, Index: s.cfg.Group, UnixNano: wallclock.Now().UnixNano()})
	if err := s.proposer.Propose(cmd).Error(); err != nil {
		s.log.Warn("could not record the group identity; will retry on next leadership", "err", err)
		return
	}
	s.log.Info("group identity created", "group_id", s.repo.GroupID())
}
