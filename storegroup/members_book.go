package storegroup

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/wire"
)

// Where the members listen now.
//
// A store's configuration comes from its host's deployment file, but a
// host can be replaced by a server at another address while the other
// host keeps running with the file it was started with. So a store does
// not take its file's addresses as final: its address book (memberBook)
// holds, for every store of the deployment, where it listens now, from,
// in order of precedence:
//
//   - for this store itself, always its own configuration (where it
//     listens);
//   - for a member of its group, a move this store accepted and its group's
//     log does not hold yet (members_move.go), then the group's log
//     (repository.MemberAddress records, which the leader proposes), then
//     the file;
//   - for a store of another group, what that group's stores said
//     (wire.MemberList, asked every memberLearnInterval), then the file.
//
// Everything that reaches another store goes through the book: raft's
// transport (ServerAddr, raft.ServerAddressProvider), the raft port's
// member check, probes, pings, repair, redirects and status.

// memberBook is a store's view of where every store of the deployment
// listens. Safe for concurrent use; ServerAddr is on raft's path of every
// RPC and takes a read lock only.
type memberBook struct {
	self       Member
	group      int
	file       []Member    // this store's group as configured, in order
	fileOthers []PeerGroup // the other groups as configured

	mu       sync.RWMutex
	recorded map[string]Member // from the group's log
	accepted map[string]Member // moves this store accepted that the log does not hold yet
	learned  map[int]map[string]learnedMember
}

// learnedMember is another group's store as one of its group said.
type learnedMember struct {
	Member
	recorded bool // in that group's log
}

func newMemberBook(cfg Config) *memberBook {
	return &memberBook{
		self:       cfg.self(),
		group:      cfg.Group,
		file:       cfg.Members,
		fileOthers: cfg.OtherGroups,
		recorded:   map[string]Member{},
		accepted:   map[string]Member{},
		learned:    map[int]map[string]learnedMember{},
	}
}

// fileMember returns the configuration's entry for a member of the group.
func (b *memberBook) fileMember(name string) (Member, bool) {
	for _, m := range b.file {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// current returns where a member of the group listens now; locked by the
// caller.
func (b *memberBook) current(m Member) Member {
	switch {
	case m.Name == b.self.Name:
		return b.self
	case b.accepted[m.Name].Name != "":
		return b.accepted[m.Name]
	case b.recorded[m.Name].Name != "":
		return b.recorded[m.Name]
	}
	return m
}

// members returns the group's members where they listen now, in the
// configuration's order.
func (b *memberBook) members() []Member {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]Member, len(b.file))
	for i, m := range b.file {
		out[i] = b.current(m)
	}
	return out
}

// member returns a member of the group where it listens now.
func (b *memberBook) member(name string) (Member, bool) {
	m, ok := b.fileMember(name)
	if !ok {
		return Member{}, false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.current(m), true
}

// others returns the other groups with their stores where they listen now.
func (b *memberBook) others() []PeerGroup {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]PeerGroup, len(b.fileOthers))
	for i, g := range b.fileOthers {
		pg := PeerGroup{Index: g.Index, Members: make([]Member, len(g.Members))}
		for j, m := range g.Members {
			if l, ok := b.learned[g.Index][m.Name]; ok {
				m = l.Member
			}
			pg.Members[j] = m
		}
		out[i] = pg
	}
	return out
}

// clientAddrs returns the client addresses of group's stores where they
// listen now (another group's, or this store's own group).
func (b *memberBook) clientAddrs(group int) []string {
	var ms []Member
	if group == b.group {
		ms = b.members()
	} else {
		for _, g := range b.others() {
			if g.Index == group {
				ms = g.Members
			}
		}
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ClientAddr
	}
	return out
}

// ServerAddr implements raft.ServerAddressProvider: raft's transport dials
// a member where the book says it listens, whatever address raft's
// configuration holds (it is updated too, but only by a leader: a group
// without one must still reach a member that moved, to elect one).
func (b *memberBook) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	m, ok := b.member(string(id))
	if !ok {
		return "", fmt.Errorf("%s is not a member of group %d", id, b.group)
	}
	return raft.ServerAddress(m.RaftAddr), nil
}

// refresh replaces the recorded addresses with the group's log's. A move
// accepted here is dropped once the log records its member, with those
// addresses or with later ones: the log has the last word.
func (b *memberBook) refresh(records []repository.MemberAddressRecord) {
	rec := map[string]Member{}
	for _, r := range records {
		if _, ok := b.fileMember(r.Name); ok {
			rec[r.Name] = Member{Name: r.Name, RaftAddr: r.RaftAddr, ClientAddr: r.ClientAddr}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, acc := range b.accepted {
		if r, ok := rec[name]; ok && (r == acc || r != b.recorded[name]) {
			delete(b.accepted, name)
		}
	}
	b.recorded = rec
}

// accept records a member's move that this store checked
// (members_move.go) and uses it from now on.
func (b *memberBook) accept(m Member) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recorded[m.Name] == m {
		delete(b.accepted, m.Name)
		return
	}
	b.accepted[m.Name] = m
}

// unrecorded returns the moves this store accepted that the log does not
// hold yet: a leader proposes them.
func (b *memberBook) unrecorded() []Member {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []Member
	for _, m := range b.file {
		if acc, ok := b.accepted[m.Name]; ok {
			out = append(out, acc)
		}
	}
	return out
}

// isRecorded reports whether the log records exactly m.
func (b *memberBook) isRecorded(m Member) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.recorded[m.Name] == m
}

// durable reports whether this store will still place m where it is after
// a restart: the log records it, or the configuration says so.
func (b *memberBook) durable(m Member) bool {
	f, _ := b.fileMember(m.Name)
	return f == m || b.isRecorded(m)
}

// learn takes what a store of another group said of its group's members:
// a recorded address always, one its store only accepted unless a
// recorded one is known, and nothing of what is only that store's file
// (which may be older than this store's).
func (b *memberBook) learn(group int, list []wire.MemberAddr) {
	var known map[string]bool
	for _, g := range b.fileOthers {
		if g.Index == group {
			known = map[string]bool{}
			for _, m := range g.Members {
				known[m.Name] = true
			}
		}
	}
	if known == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.learned[group] == nil {
		b.learned[group] = map[string]learnedMember{}
	}
	for _, a := range list {
		if !known[a.Name] || a.RaftAddr == "" || a.ClientAddr == "" {
			continue
		}
		m := Member{Name: a.Name, RaftAddr: a.RaftAddr, ClientAddr: a.ClientAddr}
		switch prev, had := b.learned[group][a.Name]; {
		case a.Recorded:
			b.learned[group][a.Name] = learnedMember{Member: m, recorded: true}
		case a.Moved && (!had || !prev.recorded):
			b.learned[group][a.Name] = learnedMember{Member: m}
		}
	}
}

// list is this store's group as a MemberList reports it.
func (b *memberBook) list() []wire.MemberAddr {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]wire.MemberAddr, len(b.file))
	for i, f := range b.file {
		m := b.current(f)
		out[i] = wire.MemberAddr{Name: m.Name, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr, Moved: m != f, Recorded: b.recorded[m.Name] == m}
	}
	return out
}

// MovedMember is a member of the group that listens elsewhere than the
// store's deployment file says, as Status reports it.
type MovedMember struct {
	Name       string `json:"name"`
	RaftAddr   string `json:"raft_addr"`
	ClientAddr string `json:"client_addr"`
	// FileClientAddr is where the file places it.
	FileClientAddr string `json:"file_client_addr"`
	// Recorded: the group's log holds the new addresses (else only this
	// store accepted them so far).
	Recorded bool `json:"recorded"`
}

// moved lists the members that listen elsewhere than the file says.
func (b *memberBook) moved() []MovedMember {
	var out []MovedMember
	for _, a := range b.list() {
		if !a.Moved {
			continue
		}
		f, _ := b.fileMember(a.Name)
		out = append(out, MovedMember{Name: a.Name, RaftAddr: a.RaftAddr, ClientAddr: a.ClientAddr, FileClientAddr: f.ClientAddr, Recorded: a.Recorded})
	}
	return out
}

// addressBook returns the store's address book, made on first use from its
// configuration and the records of its repository (so a store with state
// reaches a moved member from its first raft RPC on).
func (s *Store) addressBook() *memberBook {
	s.bookOnce.Do(func() {
		s.book = newMemberBook(s.cfg)
		if s.repo != nil {
			if recs, err := s.repo.MemberAddresses(); err == nil {
				s.book.refresh(recs)
			}
		}
	})
	return s.book
}

// currentMember returns a member of the group where it listens now.
func (s *Store) currentMember(name string) (Member, bool) { return s.addressBook().member(name) }

// currentOtherGroups returns the other groups where their stores listen now.
func (s *Store) currentOtherGroups() []PeerGroup { return s.addressBook().others() }
