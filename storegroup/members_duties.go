package storegroup

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/logevery"
	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/wire"
)

// The address book's upkeep, on every store (members_book.go says what
// the book is): it reads the group's member records after every few applied
// entries, asks the other groups where their stores listen, tells the
// group where this store listens until every member knows it durably,
// and, on the leader, records accepted moves in the log and in raft's
// configuration.

const (
	// memberRefreshInterval is how often the book rereads the records of
	// the group's log, and the leader records the moves it accepted.
	memberRefreshInterval = 500 * time.Millisecond
	// memberLearnInterval is how often a store asks the other groups
	// where their stores listen.
	memberLearnInterval = 5 * time.Second
	// moveRetryMax bounds the wait between two rounds of telling the
	// members where this store listens. It is short because a member that
	// could not be reached is often a host coming back without its state,
	// and it cannot reach its group until told (see moveRecheckInterval).
	moveRetryMax = 2 * time.Second
	// moveRecheckInterval is how often a store tells a member again, once
	// the member knew its addresses: a member that lost its disk comes back
	// with only its deployment file, which may name an address this store
	// left, and it waits to reach its group there; the group's publishers
	// may know no other way in. One short request per member and interval.
	moveRecheckInterval = 2 * time.Second
	// moveRefusalLogEvery bounds the refusal log lines.
	moveRefusalLogEvery = 30 * time.Second
)

// moveRefusals is what the members said when they refused this store's
// addresses, while they do.
type moveRefusals struct {
	mu  sync.Mutex
	by  map[string]string // member -> reason
	log logevery.Every
}

func (r *moveRefusals) set(member, reason string) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]string{}
	}
	if r.by[member] == reason {
		return false
	}
	if reason == "" {
		delete(r.by, member)
	} else {
		r.by[member] = reason
	}
	return true
}

// text is "G1S3: reason; ..." for Status, "" when no member refuses.
func (r *moveRefusals) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for m, why := range r.by {
		parts = append(parts, m+": "+why)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// startMemberDuties starts the address book's upkeep; start calls it
// first, before raft runs, so that a moved store is reachable as soon as
// its group accepts its new address.
func (s *Store) startMemberDuties() {
	s.addressBook()
	s.moveRefusals.log.Interval = moveRefusalLogEvery
	s.bg.Add(3)
	go func() { defer s.bg.Done(); s.keepAddressBook() }()
	go func() { defer s.bg.Done(); s.learnOtherGroupsLoop() }()
	go func() { defer s.bg.Done(); s.announceAddress() }()
}

// keepAddressBook rereads the group's member records and, on the leader,
// records the moves this store accepted.
func (s *Store) keepAddressBook() {
	tick := time.NewTicker(memberRefreshInterval)
	defer tick.Stop()
	for {
		s.refreshAddressBook()
		if s.IsLeader() {
			s.recordMoves()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Store) refreshAddressBook() {
	if recs, err := s.repo.MemberAddresses(); err == nil {
		s.addressBook().refresh(recs)
	}
}

// recordMoves proposes the moves this store accepted that the log does not
// hold, and brings raft's configuration to the recorded addresses.
func (s *Store) recordMoves() {
	for _, m := range s.addressBook().unrecorded() {
		if err := s.recordMember(s.ctx, m); err != nil {
			s.log.Warn("could not record a member's new addresses in the group's log; will retry", "member", m.Name, "err", err)
		}
	}
	s.reconcileRaftAddresses()
}

// recordMember writes m's addresses into the group's log (the leader only:
// a follower's proposal is refused) and brings raft's configuration to
// them.
func (s *Store) recordMember(ctx context.Context, m Member) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cmd := repository.EncodeMemberAddress(repository.MemberAddress{Name: m.Name, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr, UnixNano: wallclock.Now().UnixNano()})
	if err := s.proposer.Propose(cmd).Error(); err != nil {
		return err
	}
	s.refreshAddressBook()
	s.log.Info("recorded a member's addresses in the group's log", "member", m.Name, "raft_addr", m.RaftAddr, "client_addr", m.ClientAddr)
	s.reconcileRaftAddresses()
	return nil
}

// reconcileRaftAddresses changes, in raft's configuration, the address of
// every member whose recorded one differs (hashicorp/raft's AddVoter, or
// AddNonvoter, with an existing server ID changes only its address). The
// leader's own entry is recorded first if it moved. Raft reaches members
// through the address book whatever its configuration says
// (memberBook.ServerAddr); the configuration is kept right for whoever
// reads it (a store that starts from it, raft's own logs, status).
func (s *Store) reconcileRaftAddresses() {
	r := s.raftNode()
	if r == nil || r.State() != raft.Leader {
		return
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	book := s.addressBook()
	for _, srv := range f.Configuration().Servers {
		m, ok := book.member(string(srv.ID))
		if !ok || string(srv.Address) == m.RaftAddr {
			continue
		}
		if !book.isRecorded(m) {
			if m.Name == s.cfg.Name {
				// The leader itself listens elsewhere than the group knew
				// (it moved with its state): record it, change raft next.
				cmd := repository.EncodeMemberAddress(repository.MemberAddress{Name: m.Name, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr, UnixNano: wallclock.Now().UnixNano()})
				if err := s.proposer.Propose(cmd).Error(); err == nil {
					s.refreshAddressBook()
				}
			}
			continue
		}
		var fut raft.IndexFuture
		if srv.Suffrage == raft.Voter {
			fut = r.AddVoter(srv.ID, raft.ServerAddress(m.RaftAddr), 0, s.cfg.ApplyTimeout)
		} else {
			fut = r.AddNonvoter(srv.ID, raft.ServerAddress(m.RaftAddr), 0, s.cfg.ApplyTimeout)
		}
		if err := fut.Error(); err != nil {
			s.log.Warn("could not change a member's address in raft's configuration; will retry", "member", m.Name, "raft_addr", m.RaftAddr, "err", err)
			return
		}
		s.log.Info("changed a member's address in raft's configuration (same server ID, same vote)", "member", m.Name, "from", string(srv.Address), "to", m.RaftAddr, "suffrage", srv.Suffrage.String())
	}
}

// learnOtherGroupsLoop asks the other groups where their stores listen,
// every memberLearnInterval.
func (s *Store) learnOtherGroupsLoop() {
	if len(s.cfg.OtherGroups) == 0 {
		return
	}
	tick := time.NewTicker(memberLearnInterval)
	defer tick.Stop()
	for {
		s.learnOtherGroups(s.ctx)
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// learnOtherGroups asks one store of each other group (the first that
// answers as the store the book places there) for its group's members.
func (s *Store) learnOtherGroups(ctx context.Context) {
	for _, g := range s.currentOtherGroups() {
		for _, m := range g.Members {
			list, err := AskMembers(ctx, m.ClientAddr, s.dialer(time.Second))
			if err != nil || list.Group != g.Index || list.Store != m.Name {
				continue
			}
			s.addressBook().learn(g.Index, list.Members)
			break
		}
	}
}

// AskMembers asks the store at addr where the members of its group listen.
func AskMembers(ctx context.Context, addr string, d *wire.Dialer) (*wire.MemberList, error) {
	return askOnce[*wire.MemberList](ctx, addr, d, &wire.Members{ReqID: 1}, "Members")
}

// announceAddress tells every other member of the group where this store
// listens, until each knows it durably (its deployment file or the group's
// log says so), and each again every moveRecheckInterval, for a member
// that comes back without its state. A member that refuses is asked
// again, and its reason is logged and shown in Status (MoveRefused):
// typically the store's old incarnation still answers at its old address.
func (s *Store) announceAddress() {
	known := map[string]time.Time{} // member -> when it last said it knows durably
	wait := time.Second
	for {
		pending := 0
		for _, p := range s.addressBook().members() {
			if p.Name == s.cfg.Name || time.Since(known[p.Name]) < moveRecheckInterval {
				continue
			}
			v, err := s.tellMove(s.ctx, p)
			switch {
			case s.ctx.Err() != nil:
				return
			case err != nil:
				pending++
				s.log.Debug("could not tell a member where this store listens; will retry", "member", p.Name, "err", err)
			case v.Verdict == wire.MoveRefused:
				pending++
				s.moveRefusals.set(p.Name, v.Reason)
				if dropped, ok := s.moveRefusals.log.Allow(time.Now()); ok {
					s.log.Error("a member of the group refuses this store's address: it keeps routing to where it knew this store; fix the cause (see why) and this store is accepted on its next try",
						"member", p.Name, "why", v.Reason, "raft_addr", s.cfg.self().RaftAddr, "client_addr", s.cfg.self().ClientAddr, "refusals_not_logged", dropped)
				}
			default:
				if s.moveRefusals.set(p.Name, "") {
					s.log.Info("a member that refused this store's address no longer does", "member", p.Name)
				}
				if v.Verdict == wire.MoveAccepted {
					s.log.Info("a member accepted this store's new address", "member", p.Name, "recorded", v.Recorded)
				}
				if v.Recorded {
					known[p.Name] = time.Now()
				} else {
					pending++
				}
			}
		}
		next := wait
		if pending == 0 {
			// Every member knows: ask each again when its time comes.
			next, wait = moveRecheckInterval, time.Second
		} else {
			wait = min(2*wait, moveRetryMax)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(next):
		}
	}
}
