package raftport

import (
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/quorum"
)

// What the leader knows of its members' logs, for the intragroup
// behaviours all-active and all (package clientserver's intragroup.go).
// hashicorp/raft keeps each follower's match index to itself, so the
// leader reads it off the wire: every AppendEntries and InstallSnapshot answer passes through the
// store's transport (Transport), and a follower answers success only
// once it has stored the entries in its raft log, which raft-boltdb
// fsyncs. A successful answer to a request of term T whose last entry is N
// says the follower's log holds everything up to N as the leader of T has
// it; entries committed before stay at their index in every later
// leader's log, so a member recorded at (T, N) holds every committed entry
// up to N for good. Any answer at all, heartbeats included, says the member
// runs.

// Progress is the leader's record of each other member's log, as its
// answers told. The store makes one, has its Transport record into it
// (Transport.RecordAnswers), and reads it for the intragroup rule.
type Progress struct {
	mu      sync.Mutex
	members map[raft.ServerID]*memberLog
	wake    chan struct{} // closed at the next advance; nil while nobody waits
	// leadTerm is the term the waits last saw this store lead, and since
	// when: a new leader counts every member as just heard from, as it
	// counts publishers (storegroup's activity.go), so it never drops a
	// member before it had the time to hear from it.
	leadTerm  uint64
	leadSince time.Time
}

// memberLog is what one member's answers said.
type memberLog struct {
	term  uint64    // term of the request of the latest successful answer
	match uint64    // the highest index its log holds, as answers of that term said
	heard time.Time // when it last answered anything
}

// NewProgress returns an empty record: no member heard from yet.
func NewProgress() *Progress {
	return &Progress{members: map[raft.ServerID]*memberLog{}}
}

// answered records an answer of member id to a request of term term. ok
// says the request succeeded; match is the index its log then reaches (0
// when the answer says nothing of the log: a heartbeat).
func (mp *Progress) answered(id raft.ServerID, term uint64, ok bool, match uint64) {
	if mp == nil {
		return
	}
	now := time.Now()
	mp.mu.Lock()
	defer mp.mu.Unlock()
	m := mp.members[id]
	if m == nil {
		m = &memberLog{}
		mp.members[id] = m
	}
	m.heard = now
	if !ok || match == 0 || term < m.term || (term == m.term && match <= m.match) {
		return
	}
	if term > m.term {
		m.term, m.match = term, match
	} else {
		m.match = match
	}
	if mp.wake != nil {
		close(mp.wake)
		mp.wake = nil
	}
}

// Changed returns a channel closed at the next advance of a member's log.
func (mp *Progress) Changed() <-chan struct{} {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.wake == nil {
		mp.wake = make(chan struct{})
	}
	return mp.wake
}

// MemberView is one member as a wait sees it.
type MemberView struct {
	Name    string
	Running bool          // heard from within the window
	Holds   bool          // its log holds the entry waited for
	Quiet   time.Duration // since it was last heard from
}

// View returns, for the leader of term term, each of others as the rule
// sees it for the entry at index: running if heard from within window,
// holding it if an answer of term term or later said so.
func (mp *Progress) View(others []string, term, index uint64, now time.Time, window time.Duration) []MemberView {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.leadTerm != term {
		mp.leadTerm, mp.leadSince = term, now
	}
	out := make([]MemberView, len(others))
	for i, name := range others {
		v := MemberView{Name: name}
		last := mp.leadSince
		if m := mp.members[raft.ServerID(name)]; m != nil {
			last = later(last, m.heard)
			v.Holds = m.term >= term && m.match >= index
		}
		v.Quiet = now.Sub(last)
		v.Running = v.Quiet < window
		out[i] = v
	}
	return out
}

// Met applies the intragroup rule to the leader (running, holding) and
// the views of the other members.
func Met(b quorum.Intragroup, views []MemberView) bool {
	members := make([]quorum.Member, 0, len(views)+1)
	members = append(members, quorum.Member{Running: true, Holds: true})
	for _, v := range views {
		members = append(members, quorum.Member{Running: v.Running, Holds: v.Holds})
	}
	return b.Met(members)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// The transport's side: Transport hands every answer to its members
// record before raft sees it. Pipelined AppendEntries answers come through
// a channel, so the pipeline is wrapped and its futures forwarded.

// AppendEntries implements raft.Transport, recording the member's answer.
func (g *Transport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := g.checkOutgoing(id, args); err != nil {
		return err
	}
	err := g.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil {
		g.members.answered(id, args.Term, resp.Success, appendedThrough(args))
	}
	return err
}

// InstallSnapshot implements raft.Transport: a member that installed a
// snapshot holds everything up to its last index.
func (g *Transport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := g.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	if err == nil {
		g.members.answered(id, args.Term, resp.Success, args.LastLogIndex)
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport with a pipeline whose
// answers are recorded and whose entries are checked.
func (g *Transport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := g.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil || (g.members == nil && g.entries.Load() == nil) {
		return p, err
	}
	op := &observedPipeline{AppendPipeline: p, g: g, id: id, members: g.members, out: make(chan raft.AppendFuture, 128), done: make(chan struct{})}
	go op.forward()
	return op, nil
}

// appendedThrough is the index up to which a successful answer to args
// says the member's log matches the leader's: its last entry, or, for a
// request without entries, the entry it checked (0 for a heartbeat, which
// checks none).
func appendedThrough(args *raft.AppendEntriesRequest) uint64 {
	if n := len(args.Entries); n > 0 {
		return args.Entries[n-1].Index
	}
	return args.PrevLogEntry
}

// observedPipeline is a raft pipeline whose answers are recorded on their
// way to raft.
type observedPipeline struct {
	raft.AppendPipeline
	g       *Transport
	id      raft.ServerID
	members *Progress
	out     chan raft.AppendFuture
	done    chan struct{}
	once    sync.Once
}

func (op *observedPipeline) forward() {
	in := op.AppendPipeline.Consumer()
	for {
		select {
		case f := <-in:
			if f.Error() == nil {
				op.members.answered(op.id, f.Request().Term, f.Response().Success, appendedThrough(f.Request()))
			}
			select {
			case op.out <- f:
			case <-op.done:
				return
			}
		case <-op.done:
			return
		}
	}
}

// AppendEntries implements raft.AppendPipeline: a request with a damaged
// entry is not sent (checkOutgoing); raft then stops the pipeline and
// retries without it, after its back-off.
func (op *observedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := op.g.checkOutgoing(op.id, args); err != nil {
		return nil, err
	}
	return op.AppendPipeline.AppendEntries(args, resp)
}

// Consumer implements raft.AppendPipeline.
func (op *observedPipeline) Consumer() <-chan raft.AppendFuture { return op.out }

// Close implements raft.AppendPipeline.
func (op *observedPipeline) Close() error {
	op.once.Do(func() { close(op.done) })
	return op.AppendPipeline.Close()
}
