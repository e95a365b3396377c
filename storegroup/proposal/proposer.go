package proposal

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/storegroup/stagetime"
)

// Proposer is the one place a store proposes raft entries. Client requests
// (Register, Consumed, Publish), the leader's own duties (InitGroup,
// PeerGroup, ExpireSession, Trim) and repair's copies all go through it, so
// the timeout a proposal may wait to enter the log and the early answer of
// a Publish live here and nowhere else. (The back-pressure on one client
// connection, its window of proposals in flight, is the client server's:
// package clientserver.)
//
// Two kinds of proposal:
//
//   - Propose: answered by raft's future, once the entry is applied on this
//     store (or the proposal failed). Everything but client publishing.
//   - ProposeDecided: answered as soon as the FSM has decided the entry's
//     result, before the repository commits (see proposals below). Client
//     Publish frames only: their answer is on the data path.
type Proposer struct {
	node    func() *raft.Raft // the raft node, nil until it runs
	timeout time.Duration     // ApplyTimeout: how long a proposal may wait to enter the log
	pending *proposals        // the ProposeDecided entries still waiting for their answer

	// Gate, when set, refuses a command before it reaches raft: the
	// store's format-level gate (repository.Gate), so that no command a
	// member of the group cannot read is ever proposed, by any path.
	Gate func(cmd []byte) error

	withheldMu sync.Mutex
	withheld   [][]byte // advisory commands the gate refused, oldest first (Advise)
}

// maxWithheld bounds the advisory commands kept for a later level: each
// is one publisher's skipped range, which the publisher sends again on
// its next connection anyway.
const maxWithheld = 256

// New returns the proposer of the raft node node returns (nil until it
// runs); timeout is how long a proposal may wait to enter the log. stages,
// if not nil, times the raft_queue and commit stages of the ProposeDecided
// entries.
func New(node func() *raft.Raft, timeout time.Duration, stages *stagetime.Timer) *Proposer {
	ps := newProposals()
	ps.stages = stages
	return &Proposer{node: node, timeout: timeout, pending: ps}
}

// Propose hands cmd to raft. Its future resolves once the entry is applied
// on this store, or with raft's error (raft.ErrNotLeader when this store
// does not lead, or raft is not running yet), or Gate's.
func (p *Proposer) Propose(cmd []byte) raft.ApplyFuture {
	if err := p.gate(cmd); err != nil {
		return failedFuture{err}
	}
	r := p.node()
	if r == nil {
		return failedFuture{raft.ErrNotLeader}
	}
	return r.Apply(cmd, p.timeout)
}

// ProposeDecided hands cmd to raft with a token, and returns its answer,
// which resolves when the FSM decides the entry's result or when raft's
// future resolves, whichever comes first.
func (p *Proposer) ProposeDecided(cmd []byte) raft.ApplyFuture {
	if err := p.gate(cmd); err != nil {
		return failedFuture{err}
	}
	r := p.node()
	if r == nil {
		return failedFuture{raft.ErrNotLeader}
	}
	ps := p.pending
	n, token, answer := ps.register()
	f := r.ApplyLog(raft.Log{Data: cmd, Extensions: token}, p.timeout)
	go func() {
		err := f.Error()
		var resp any
		var index uint64
		if err == nil {
			resp, index = f.Response(), f.Index()
		}
		ps.finish(n, index, resp, err)
	}()
	return answer
}

// DecidedBatch is the FSM's hook: it answers the ProposeDecided entries among a batch with their results, from inside the
// repository's write transaction.
func (p *Proposer) DecidedBatch(logs []*raft.Log, results []repository.Result) {
	p.pending.decided(logs, results)
}

// AnsweredEarly counts the proposals answered by DecidedBatch, before the
// repository's commit.
func (p *Proposer) AnsweredEarly() uint64 { return p.pending.early.Load() }

// Abandon answers every ProposeDecided proposal still waiting with err:
// the store is stopping and raft will not answer them.
func (p *Proposer) Abandon(err error) { p.pending.abandon(err) }

// Advise proposes an advisory command, one whose answer nobody waits for
// (an Unpublished record). One the gate refuses is withheld, not dropped:
// ProposeWithheld proposes it once the gate lets it through (the group's
// level was raised). At most maxWithheld are kept, the oldest dropped.
func (p *Proposer) Advise(cmd []byte) {
	if err := p.gate(cmd); err != nil {
		p.withheldMu.Lock()
		p.withheld = append(p.withheld, cmd)
		if len(p.withheld) > maxWithheld {
			p.withheld = p.withheld[len(p.withheld)-maxWithheld:]
		}
		p.withheldMu.Unlock()
		return
	}
	p.Propose(cmd)
}

// Withheld returns how many advisory commands wait for the gate.
func (p *Proposer) Withheld() int {
	p.withheldMu.Lock()
	defer p.withheldMu.Unlock()
	return len(p.withheld)
}

// ProposeWithheld proposes the withheld advisory commands the gate now
// lets through, without waiting for their answers, and keeps the rest.
func (p *Proposer) ProposeWithheld() {
	p.withheldMu.Lock()
	var ready, kept [][]byte
	for _, cmd := range p.withheld {
		if p.gate(cmd) == nil {
			ready = append(ready, cmd)
		} else {
			kept = append(kept, cmd)
		}
	}
	p.withheld = kept
	p.withheldMu.Unlock()
	for _, cmd := range ready {
		p.Propose(cmd)
	}
}

// gate applies Gate, if set.
func (p *Proposer) gate(cmd []byte) error {
	if p.Gate == nil {
		return nil
	}
	return p.Gate(cmd)
}

// failedFuture is a proposal refused before it reached raft.
type failedFuture struct{ err error }

func (f failedFuture) Error() error  { return f.err }
func (f failedFuture) Response() any { return nil }
func (f failedFuture) Index() uint64 { return 0 }

// The early answer. A Publish the leader proposes is answered as soon as the
// leader's FSM has decided its result, before the repository commits the
// batch and fsyncs: raft applies only committed entries, so by then the
// entry is in the fsynced raft log of a quorum, and applying is
// deterministic, so any replay gives the same result. Should the
// repository's commit then fail, the store stops (SPEC §4 rule 6) and
// replays the entry when started again; the group's other members apply it
// regardless. The answer no longer waits for a second fsync in series with
// the log's.
//
// The FSM recognises the entries this store proposed by a token the
// proposal carries in its raft log entry's Extensions (replicated with the
// entry, never read by apply, so apply stays a function of the commands):
// this process's random prefix and a counter. Entries proposed by other
// stores, or by an earlier process of this one, never match. An entry that
// is not recognised, or a proposal that fails, is answered by raft's
// future, as every other request is.

// tokenSize is the length of a proposal token: an 8-byte prefix and an
// 8-byte counter.
const tokenSize = 16

// proposals are the Publish entries this store proposed and has not
// answered yet.
type proposals struct {
	prefix [8]byte

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]*proposal

	early atomic.Uint64 // proposals answered by decided, before the commit

	stages *stagetime.Timer // raft_queue and commit, of the entries decided
}

func newProposals() *proposals {
	p := &proposals{waiting: map[uint64]*proposal{}}
	_, _ = rand.Read(p.prefix[:]) // never fails (crypto/rand panics instead)
	return p
}

// register adds a waiting proposal and returns its counter and the token
// its entry carries.
func (ps *proposals) register() (uint64, []byte, *proposal) {
	p := &proposal{done: make(chan struct{}), proposed: time.Now()}
	ps.mu.Lock()
	ps.next++
	n := ps.next
	ps.waiting[n] = p
	ps.mu.Unlock()
	token := make([]byte, tokenSize)
	copy(token, ps.prefix[:])
	binary.BigEndian.PutUint64(token[8:], n)
	return n, token, p
}

// decided answers the proposals among logs with their results (one per
// log, as the FSM's batch gives them). It runs inside the FSM's write
// transaction: it only looks up tokens and closes channels.
func (ps *proposals) decided(logs []*raft.Log, results []repository.Result) {
	now := time.Now()
	for i, l := range logs {
		n, ok := ps.token(l.Extensions)
		if !ok {
			continue
		}
		if p := ps.finish(n, l.Index, &results[i], nil); p != nil {
			ps.early.Add(1)
			if !l.AppendedAt.IsZero() {
				ps.stages.Observe(stagetime.RaftQueue, l.AppendedAt.Sub(p.proposed))
				ps.stages.Observe(stagetime.Commit, now.Sub(l.AppendedAt))
			}
		}
	}
}

// token returns the counter of a token this process made.
func (ps *proposals) token(ext []byte) (uint64, bool) {
	if len(ext) != tokenSize || [8]byte(ext[:8]) != ps.prefix {
		return 0, false
	}
	return binary.BigEndian.Uint64(ext[8:]), true
}

// finish answers proposal n, if it is still waiting: the first answer
// wins. It returns the proposal this answer finished, nil if another
// answer came first.
func (ps *proposals) finish(n, index uint64, resp any, err error) *proposal {
	ps.mu.Lock()
	p, ok := ps.waiting[n]
	delete(ps.waiting, n)
	ps.mu.Unlock()
	if !ok {
		return nil
	}
	p.index, p.resp, p.err = index, resp, err
	close(p.done)
	return p
}

// abandon answers every waiting proposal with err: the store is stopping
// and raft will not answer them.
func (ps *proposals) abandon(err error) {
	ps.mu.Lock()
	waiting := ps.waiting
	ps.waiting = map[uint64]*proposal{}
	ps.mu.Unlock()
	for _, p := range waiting {
		p.err = err
		close(p.done)
	}
}

// proposal is the answer to one proposed entry.
type proposal struct {
	done     chan struct{}
	proposed time.Time // when ProposeDecided was called
	index    uint64
	resp     any
	err      error
}

var _ raft.ApplyFuture = (*proposal)(nil)

// Error waits for the answer and returns raft's error for the proposal, if
// it failed.
func (p *proposal) Error() error { <-p.done; return p.err }

// Response returns the FSM's response: a *repository.Result or an error.
func (p *proposal) Response() any { <-p.done; return p.resp }

// Index returns the entry's raft index.
func (p *proposal) Index() uint64 { <-p.done; return p.index }
