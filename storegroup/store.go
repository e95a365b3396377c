package storegroup

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"umstore/dirlock"
	"umstore/repository"
	"umstore/storegroup/clientserver"
	"umstore/storegroup/proposal"
	"umstore/storegroup/raftport"
)

// A store's life, one file per stage:
//
//	open.go    Open: lock, storage, snapshot catch-up, identity check, the helpers' wiring
//	start.go   start: how the store starts (bootstrap.go decides for an empty one), admission, catch-up
//	raft.go    the raft node's construction
//	leader.go  what the leader does besides serving clients: barrier, group identities
//	status.go  Status
//	stop.go    Close, Abort, and stopping on a fatal error
//
// The helpers receive only what they need (clientserver.Deps, built in
// client.go; repairDeps, retainDeps), and every proposal goes through the
// proposer (package proposal).

// Store is one running member of a store group.
type Store struct {
	cfg Config
	log *slog.Logger

	repo     *repository.Repo
	logStore *guardedLogStore
	logKind  string // LogStoreWAL or LogStoreBoltDB
	lock     dirlock.Lock
	snaps    *snapshotStore
	port     *raftport.Transport // what raft uses: the raft port, behind its vote gate
	fsm      *fsm
	received received // what the group sent this store since it opened (catchup_progress.go)
	client   *clientserver.Server
	repair   *repairer
	retain   *retainer
	sessions *sessions
	members  *memberWatch       // the leader's view of its members (leadership.go)
	levels   levelWatch         // what holds the group's format level back, on the leader (levels.go)
	proposer *proposal.Proposer // every raft proposal of this store
	ungated  atomic.Bool        // set only by tests (export_test.go): gate lets everything through
	metrics  *storeMetrics
	hlog     hclog.Logger

	// receivers is the leader's view of receiver sessions (receivers.go);
	// receiverDuties the leader's schedule for them; pacer holds back
	// publishers of blocking paced sources (clientserver's pacing.go).
	receivers      *receiverSessions
	receiverDuties receiverDuties
	pacer          *clientserver.Pacer

	// book is where every store of the deployment listens now, which may
	// differ from the configuration once a host was replaced (members_book.go);
	// moveRefusals what the members say when they refuse this store's
	// address (members_duties.go).
	book         *memberBook
	bookOnce     sync.Once
	moveRefusals moveRefusals

	raftMu sync.RWMutex
	r      *raft.Raft // nil until the bootstrap decision is made
	// raftSince is when r started: a store that never heard from a leader
	// has known none since then (leaderlessFor).
	raftSince time.Time

	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced at every applied batch

	lastStop string // StopClean, StopDirty or StopNew: how the store stopped last time

	refusalMu sync.Mutex
	refusal   error // why an empty store refuses to start its group, while it does

	leaderReady   atomic.Bool // leader and has applied everything committed before its term
	waitingToJoin atomic.Bool // empty, decided to join, waiting for admission
	started       chan struct{}
	running       atomic.Bool // Open has finished: a fault in a file stops the store
	failed        atomic.Pointer[error]

	ctx       context.Context
	cancel    context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed once the store has stopped

	// entryDamage paces the logs and leadership transfers of damaged log
	// entries the raft port did not carry (entrycheck.go).
	entryDamage entryDamage
}

var _ io.Closer = (*Store)(nil)

// Done is closed once the store has stopped (Close, Abort, a fatal error
// or an operator's Shutdown request).
func (s *Store) Done() <-chan struct{} { return s.done }

// Started is closed once the raft node runs.
func (s *Store) Started() <-chan struct{} { return s.started }

// Name returns the store's name.
func (s *Store) Name() string { return s.cfg.Name }

// Group returns the store's group index.
func (s *Store) Group() int { return s.cfg.Group }

// Repository exposes the store's repository for reads (tests, status).
func (s *Store) Repository() *repository.Repo { return s.repo }

// IsLeader reports whether this store leads its group and is ready to serve.
// A store that failed does not, from the moment it failed: its raft node
// may not have noticed yet (a fault in raft.db ends raft's own goroutine).
func (s *Store) IsLeader() bool { return s.leaderReady.Load() && s.failed.Load() == nil }

// Err returns the error that stopped the store, or why it refuses to start
// (ErrNoStoreWithState), if any.
func (s *Store) Err() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return s.refusalErr()
}

// raftNode returns the raft node, or nil before it has started.
func (s *Store) raftNode() *raft.Raft {
	s.raftMu.RLock()
	defer s.raftMu.RUnlock()
	return s.r
}

// leaderlessFor is how long the store has known no leader: since it last
// heard from one (raft's LastContact), or since its raft node started if
// it never did; 0 while it knows a leader (itself included), or before
// raft runs. It tells a client that a group without a leader for longer
// than an election takes has lost its majority (wire.NotLeader.NoLeaderMS).
func (s *Store) leaderlessFor() time.Duration {
	s.raftMu.RLock()
	r, since := s.r, s.raftSince
	s.raftMu.RUnlock()
	if r == nil {
		return 0
	}
	if _, id := r.LeaderWithID(); id != "" {
		return 0
	}
	if last := r.LastContact(); last.After(since) {
		since = last
	}
	return time.Since(since)
}

// leader returns the current leader's member entry, if known.
func (s *Store) leader() (Member, bool) {
	r := s.raftNode()
	if r == nil {
		return Member{}, false
	}
	_, id := r.LeaderWithID()
	if id == "" {
		return Member{}, false
	}
	return s.currentMember(string(id))
}
