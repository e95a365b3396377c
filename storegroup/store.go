package storegroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"umstore/dirlock"
	"umstore/repository"
)

// Store is one running member of a store group.
type Store struct {
	cfg Config
	log *slog.Logger

	repo     *repository.Repo
	logStore *guardedLogStore
	lock     dirlock.Lock
	snaps    *snapshotStore
	trans    *raft.NetworkTransport
	rtrans   *gatedTransport // what raft uses: trans behind the vote gate
	gate     *voteGate
	fsm      *fsm
	client   *clientServer
	repair   *repairer
	retain   *retainer
	sessions *sessions
	proposed *proposals // Publish entries proposed here, answered once decided
	metrics  *storeMetrics
	hlog     hclog.Logger

	raftMu sync.RWMutex
	r      *raft.Raft // nil until the bootstrap decision is made

	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced at every applied batch

	lastStop string // StopClean, StopDirty or StopNew: how the store stopped last time

	refusalMu sync.Mutex
	refusal   error // why an empty store refuses to start its group, while it does

	leaderReady   atomic.Bool // leader and has applied everything committed before its term
	waitingToJoin atomic.Bool // empty, decided to join, waiting for admission
	started       chan struct{}
	failed        atomic.Pointer[error]

	ctx       context.Context
	cancel    context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed once the store has stopped
}

// Open opens (or creates) the store's data directory, starts its client
// server and, in the background, its raft node: at once if the store has
// state, or after the bootstrap decision (see the package doc) if it is
// empty. Use Started to wait for the raft node.
func Open(cfg Config) (*Store, error) { return OpenContext(context.Background(), cfg) }

// OpenContext is Open whose wait for the data directory's lock (a standby
// store waits until the holder goes away) ends with ctx.
func OpenContext(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{
		cfg:       cfg,
		log:       cfg.Logger.With("store", cfg.Name, "group", cfg.Group),
		started:   make(chan struct{}),
		appliedCh: make(chan struct{}),
		done:      make(chan struct{}),
	}
	s.hlog = newRaftLogger(s.log, "raft")
	lockOpts := cfg.Lock
	lockOpts.Name, lockOpts.Logger = cfg.Name, s.log
	if lockOpts.OnWait == nil {
		lockOpts.OnWait = func(holder string) {
			s.log.Info("standby: waiting for the data directory's lock", "held_by", holder)
		}
	}
	lk, err := dirlock.Acquire(ctx, cfg.DataDir, lockOpts)
	if err != nil {
		return nil, err
	}
	s.lock = lk
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.repair = newRepairer(s)
	s.retain = newRetainer(s)
	s.sessions = newSessions()
	s.proposed = newProposals()
	s.metrics = newStoreMetrics(cfg.Name, cfg.Group)
	if err := s.openStorage(); err != nil {
		s.closeStorage()
		lk.Release()
		return nil, err
	}
	s.logRetentionFit()
	if err := s.checkIdentity(ctx); err != nil {
		s.closeStorage()
		lk.Release()
		return nil, err
	}
	self := cfg.self()
	stream, err := newStreamLayer(self.RaftAddr, cfg.LocalIP, cfg.Security, cfg.Dial)
	if err != nil {
		s.closeStorage()
		lk.Release()
		return nil, err
	}
	s.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  s.hlog.Named("transport"),
	})
	s.gate = &voteGate{}
	s.rtrans = newGatedTransport(s.trans, s.gate, raft.ServerID(cfg.Name), func(cand string, pos logPosition) {
		_, target := s.gate.state()
		s.log.Warn("refused a vote: this store rejoined empty and has not caught up; the candidate's log does not reach the group's last entry", "candidate", cand, "candidate_log", pos.String(), "target", target.String())
	})
	s.client, err = newClientServer(s, self.ClientAddr)
	if err != nil {
		s.rtrans.Close()
		s.closeStorage()
		lk.Release()
		return nil, err
	}
	s.bg.Add(3)
	go func() {
		defer s.bg.Done()
		select {
		case <-lk.Lost():
			s.fail(fmt.Errorf("store %s lost the lease on its data directory %s (another process took it over, or it could not renew in time): stopping without writing more", cfg.Name, cfg.DataDir))
		case <-s.ctx.Done():
		}
	}()
	go func() { defer s.bg.Done(); s.client.serve() }()
	go func() { defer s.bg.Done(); s.start() }()
	return s, nil
}

func (s *Store) openStorage() error {
	dir := s.cfg.DataDir
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create data directory %s: %w", dir, err)
	}
	last, err := readLastStop(dir)
	if err != nil {
		return err
	}
	s.lastStop = last
	err = s.openFiles()
	if err != nil && isDamage(err) {
		// Damaged files are never deleted: move them aside and rejoin empty.
		s.closeStorage()
		s.repo, s.logStore = nil, nil
		backup, berr := BackupDataDir(dir)
		if berr != nil {
			return fmt.Errorf("%w; moving the damaged files to a backup also failed: %v", err, berr)
		}
		s.log.Error("the store's files are damaged: moved them to a numbered backup; the store rejoins its group empty", "err", err, "backup", backup)
		s.lastStop = StopNew
		err = s.openFiles()
	}
	return err
}

// openFiles opens the repository and raft's log and snapshot stores.
func (s *Store) openFiles() error {
	dir := s.cfg.DataDir
	var err error
	s.repo, err = repository.Open(filepath.Join(dir, "repo.db"), repository.Options{NoSync: s.cfg.NoSync})
	if err != nil {
		return fmt.Errorf("open repository of store %s: %w", s.cfg.Name, err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"),
		// As the repository: the freelist is rebuilt at open instead of
		// written by every commit, and kept as a map. Commits stay fsynced.
		BoltOptions: &bbolt.Options{
			Timeout:        10 * time.Second,
			NoFreelistSync: true,
			FreelistType:   bbolt.FreelistMapType,
		},
	})
	if err != nil {
		return fmt.Errorf("open raft log of store %s: %w", s.cfg.Name, err)
	}
	s.logStore = &guardedLogStore{BoltStore: bolt, lock: s.lock, onWriteError: func(err error) {
		s.fail(fmt.Errorf("store %s cannot write its raft log in %s: %w; it stopped without skipping anything: fix the cause and start it again, it catches up", s.cfg.Name, dir, err))
	}}
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, s.hlog.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("open snapshot store of store %s: %w", s.cfg.Name, err)
	}
	s.snaps = &snapshotStore{FileSnapshotStore: files, repo: s.repo, metrics: s.metrics}
	s.fsm = &fsm{repo: s.repo, onFatal: s.fail, onApplied: s.notifyApplied, decided: s.proposed.decided, metrics: s.metrics, lock: s.lock}
	return s.catchUpFromSnapshot()
}

// catchUpFromSnapshot restores the latest local snapshot if the repository
// is behind it. Raft runs with NoSnapshotRestoreOnStart and replays only the
// entries after its latest snapshot, so a repository that is behind the
// snapshot (it should never be: snapshots are taken from durable state)
// would otherwise silently miss entries.
func (s *Store) catchUpFromSnapshot() error {
	metas, err := s.snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	latest := metas[0]
	if latest.Index <= s.repo.AppliedIndex() {
		return nil
	}
	_, rc, ref, refIndex, err := s.snaps.open(latest.ID)
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", latest.ID, err)
	}
	defer rc.Close()
	if ref {
		// The store's own snapshot: the repository itself.
		if refIndex > s.repo.AppliedIndex() {
			return fmt.Errorf("store %s: %w (snapshot %s at %d, repository at %d)", s.cfg.Name, errBehindSnapshot, latest.ID, refIndex, s.repo.AppliedIndex())
		}
		return nil
	}
	s.log.Warn("repository is behind the latest snapshot; restoring it", "applied", s.repo.AppliedIndex(), "snapshot", latest.Index)
	if err := s.repo.Restore(rc); err != nil {
		return fmt.Errorf("restore snapshot %s: %w", latest.ID, err)
	}
	return nil
}

// start decides how the store starts (see decideStart) and starts raft.
func (s *Store) start() {
	marker, err := readRejoin(s.cfg.DataDir)
	if err != nil {
		s.fail(err)
		return
	}
	hasState, err := s.hasLocalState()
	if err != nil {
		s.fail(fmt.Errorf("read local raft state: %w", err))
		return
	}
	var d startDecision
	switch {
	case marker != nil:
		// A partial log is as unsafe to vote with as an empty one.
		d = startDecision{kind: startJoinExisting, target: marker.Target, from: marker.From}
		s.log.Warn("resuming an interrupted catch-up: voting only for candidates whose log reaches the target", "target", d.target.String())
	case hasState:
		d = startDecision{kind: startWithState}
	default:
		d, err = s.decideStart(s.ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.fail(err)
			}
			return
		}
		if d.kind == startJoinExisting {
			if err := writeRejoin(s.cfg.DataDir, rejoinMarker{Target: d.target, From: d.from}); err != nil {
				s.fail(fmt.Errorf("record the rejoin target: %w", err))
				return
			}
		}
	}
	release := func() {}
	if d.kind == startJoinExisting {
		adm := s.cfg.Admission
		if adm == nil {
			adm = unlimited{}
		}
		if hr, ok := adm.(holderReporter); ok {
			if holder := hr.CatchingUp()[s.cfg.Group]; holder != "" {
				s.log.Info("empty store waits for its turn to join its group: another empty store of the group is still catching up", "waits_for", holder)
			}
		}
		s.waitingToJoin.Store(true)
		release, err = adm.Acquire(s.ctx, s.cfg.Group, s.cfg.Name)
		s.waitingToJoin.Store(false)
		if err != nil {
			return // stopping
		}
		s.gate.close(d.target)
		s.log.Info("joining the group empty: catching up before voting", "target", d.target.String(), "from", d.from)
	}
	if err := s.startRaft(d.kind == startBootstrap); err != nil {
		release()
		s.fail(err)
		return
	}
	if err := os.Remove(filepath.Join(s.cfg.DataDir, acceptLossFile)); err == nil {
		s.log.Warn("the accepted loss is done: the group started again; its old messages are gone")
	}
	s.bg.Add(3)
	go func() { defer s.bg.Done(); s.watchLeadership() }()
	go func() { defer s.bg.Done(); s.repair.run(s.ctx) }()
	go func() { defer s.bg.Done(); s.retain.run(s.ctx) }()
	if d.kind == startJoinExisting {
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.catchUp(d.target, release) }()
	}
}

// catchUp waits until raft has applied the target entry, then opens the
// vote gate, removes the rejoin marker and lets the next empty store of
// the group start.
func (s *Store) catchUp(target logPosition, release func()) {
	defer release()
	r := s.raftNode()
	start := time.Now()
	lastReport := start
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		applied := r.AppliedIndex()
		if applied >= target.Index {
			if err := removeRejoin(s.cfg.DataDir); err != nil {
				s.fail(fmt.Errorf("clear the rejoin marker: %w", err))
				return
			}
			s.gate.open()
			s.log.Info("caught up with the group; voting normally", "applied", applied, "took", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(lastReport) > 3*time.Second {
			lastReport = time.Now()
			s.log.Info("catching up", "applied", applied, "target", target.Index, "percent", 100*applied/max(target.Index, 1))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// diskPosition reads the last entry of the raft log on disk, or of the
// latest snapshot when that is further, as raft itself does at start.
func (s *Store) diskPosition() (index, term uint64) {
	if s.logStore != nil {
		if last, err := s.logStore.LastIndex(); err == nil && last > 0 {
			var l raft.Log
			if err := s.logStore.GetLog(last, &l); err == nil {
				index, term = l.Index, l.Term
			}
		}
	}
	if s.snaps != nil {
		if metas, err := s.snaps.List(); err == nil && len(metas) > 0 && metas[0].Index > index {
			index, term = metas[0].Index, metas[0].Term
		}
	}
	return index, term
}

func (s *Store) hasLocalState() (bool, error) {
	if s.repo.HasState() {
		return true, nil
	}
	return raft.HasExistingState(s.logStore, s.logStore, s.snaps)
}

// logCacheEntries is how many of the latest raft log entries a store keeps
// in memory for replication. An entry is at most about 1 MiB (merged client
// frames), so this bounds the cache at 8 MiB per store; 32 entries held
// 150 MB of heap over six stores at 1 KiB flat out, for no measurable gain
// in throughput.
const logCacheEntries = 8

func (s *Store) startRaft(bootstrap bool) error {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(s.cfg.Name)
	rc.HeartbeatTimeout = s.cfg.HeartbeatTimeout
	rc.ElectionTimeout = s.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = s.cfg.LeaderLeaseTimeout
	rc.MaxAppendEntries = s.cfg.MaxAppendEntries
	rc.SnapshotThreshold = s.cfg.SnapshotThreshold
	rc.SnapshotInterval = s.cfg.SnapshotInterval
	rc.TrailingLogs = s.cfg.TrailingLogs
	rc.NoSnapshotRestoreOnStart = true
	// Buffer proposals while the leader writes its log: without it each
	// client frame waits for the previous fsync and every raft batch holds a
	// single entry. Measured on the dev topology: 64 B 82k → 139k msgs/s,
	// 1 KiB 21k → 31k (BENCH.md). The cost is that ApplyTimeout bounds only
	// the enqueueing; a future still resolves when leadership is lost.
	rc.BatchApplyCh = true
	rc.Logger = s.hlog
	// The leader reads back every entry it sends to a follower; recent ones
	// come from memory instead of being read and decoded from raft.db.
	logs, err := raft.NewLogCache(logCacheEntries, s.logStore)
	if err != nil {
		return fmt.Errorf("start raft for store %s: %w", s.cfg.Name, err)
	}
	r, err := raft.NewRaft(rc, s.fsm, logs, s.logStore, s.snaps, s.rtrans)
	if err != nil {
		return fmt.Errorf("start raft for store %s: %w", s.cfg.Name, err)
	}
	if bootstrap {
		var servers []raft.Server
		for _, m := range s.cfg.Members {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.Name), Address: raft.ServerAddress(m.RaftAddr)})
		}
		s.log.Info("bootstrapping a brand-new group: every member reported an empty store", "members", len(servers))
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			r.Shutdown()
			return fmt.Errorf("bootstrap group %d: %w", s.cfg.Group, err)
		}
	}
	s.raftMu.Lock()
	s.r = r
	s.raftMu.Unlock()
	close(s.started)
	return nil
}

// raftNode returns the raft node, or nil before it has started.
func (s *Store) raftNode() *raft.Raft {
	s.raftMu.RLock()
	defer s.raftMu.RUnlock()
	return s.r
}

// watchLeadership tracks whether this store leads, and on winning
// leadership waits until everything committed earlier is applied (a
// barrier) before serving reads, then gives a new group its identity.
func (s *Store) watchLeadership() {
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
			if err := r.Barrier(s.cfg.ApplyTimeout).Error(); err == nil {
				s.sessions.reset(s.recordedOwners(), time.Now())
				s.leaderReady.Store(true)
				s.log.Info("leading the group")
				s.ensureGroupID(r)
			}
		}
		if s.leaderReady.Load() {
			s.expireSilent(time.Now())
		}
		if s.leaderReady.Load() && time.Now().After(nextPeerCheck) {
			if s.learnPeerGroups(r) {
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
func (s *Store) learnPeerGroups(r *raft.Raft) bool {
	known, err := s.repo.PeerGroups()
	if err != nil {
		return false
	}
	all := true
	for _, g := range s.cfg.OtherGroups {
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
		cmd := repository.EncodePeerGroup(repository.PeerGroup{Index: g.Index, GroupID: id, UnixNano: time.Now().UnixNano()})
		if err := r.Apply(cmd, s.cfg.ApplyTimeout).Error(); err != nil {
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
func (s *Store) ensureGroupID(r *raft.Raft) {
	if s.repo.GroupID() != "" {
		return
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		s.log.Error("cannot create a group identity", "err", err)
		return
	}
	id := hex.EncodeToString(b[:])
	cmd := repository.EncodeInitGroup(repository.InitGroup{GroupID: id, Index: s.cfg.Group, UnixNano: time.Now().UnixNano()})
	if err := r.Apply(cmd, s.cfg.ApplyTimeout).Error(); err != nil {
		s.log.Warn("could not record the group identity; will retry on next leadership", "err", err)
		return
	}
	s.log.Info("group identity created", "group_id", s.repo.GroupID())
}

// DataDirHasState reports whether dir holds a store's state: a raft log, a
// repository or a rejoin marker. A missing directory has none. The host
// daemon uses it to plan a restart before opening any store.
func DataDirHasState(dir string) bool {
	for _, f := range []string{"raft.db", "repo.db", rejoinFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

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
func (s *Store) IsLeader() bool { return s.leaderReady.Load() }

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
	return s.cfg.member(string(id))
}

// Status is a point-in-time view of a store for operators and tests.
type Status struct {
	Name         string `json:"name"`
	Group        int    `json:"group"`
	GroupID      string `json:"group_id"`
	State        string `json:"state"` // raft state, "starting" before raft runs, "failed" after a fatal error
	Leader       string `json:"leader"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	// SnapshotIndex is the index of the latest local snapshot: log entries
	// before SnapshotIndex-TrailingLogs may be gone, so a member further
	// behind is brought back by sending it the snapshot.
	SnapshotIndex uint64 `json:"snapshot_index"`
	HasState      bool   `json:"has_state"`
	// LastStop says how the store stopped before this run: clean (graceful),
	// dirty (crash or kill: raft replays its log) or new.
	LastStop string `json:"last_stop"`
	// CatchingUp is true while a store that joined empty has not reached
	// CatchUpTarget (the group's last entry when it joined).
	CatchingUp    bool   `json:"catching_up"`
	CatchUpTarget uint64 `json:"catch_up_target,omitempty"`
	// WaitingToJoin is true while an empty store waits for its turn: another
	// empty store of its group on this host is still catching up.
	WaitingToJoin bool   `json:"waiting_to_join,omitempty"`
	LastTerm      uint64 `json:"last_term"`
	// KnownGroups are the identities of the other groups this store's
	// group has recorded, by group index.
	KnownGroups map[int]string `json:"known_groups,omitempty"`
	// Sources is what this store holds of each source.
	Sources []SourceStatus `json:"sources"`
	// Repair is the intergroup repair's progress (it runs on the leader).
	Repair RepairStatus `json:"repair"`
	Error  string       `json:"error,omitempty"`
}

// SourceStatus is what a store holds of one source.
type SourceStatus struct {
	Name    string `json:"name"`
	HighSeq uint64 `json:"high_seq"`
	LowSeq  uint64 `json:"oldest_seq"` // oldest retained
	// TrimmedThrough: retention released every message up to here.
	TrimmedThrough uint64      `json:"trimmed_through,omitempty"`
	Count          uint64      `json:"count"`
	Bytes          uint64      `json:"bytes"`
	Gaps           int         `json:"gaps"`
	GapRanges      [][2]uint64 `json:"gap_ranges,omitempty"` // the first few
	// Receivers are the consumption positions receivers have recorded.
	Receivers []ReceiverStatus `json:"receivers,omitempty"`
}

// ReceiverStatus is one receiver's recorded consumption of a source.
type ReceiverStatus struct {
	Name     string `json:"name"`
	Consumed uint64 `json:"consumed_seq"`
}

// maxGapsShown bounds the gap ranges listed per source in a status.
const maxGapsShown = 10

// Status reports the store's current state.
func (s *Store) Status() Status {
	st := Status{Name: s.cfg.Name, Group: s.cfg.Group, GroupID: s.repo.GroupID(), State: "starting", AppliedIndex: s.repo.AppliedIndex(), LastStop: s.lastStop}
	st.HasState, _ = s.hasLocalState()
	if r := s.raftNode(); r != nil {
		st.State = r.State().String()
		st.LastIndex = r.LastIndex()
		stats := r.Stats()
		st.SnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
		st.LastTerm, _ = strconv.ParseUint(stats["last_log_term"], 10, 64)
		if m, ok := s.leader(); ok {
			st.Leader = m.Name
		}
	} else if st.HasState {
		// Raft is not running yet (or any more), but the log on disk says
		// how far this store got. An empty member deciding whom it may vote
		// for reads this position: reporting 0 here let it take a stale
		// member for the most up-to-date one.
		st.LastIndex, st.LastTerm = s.diskPosition()
	}
	st.WaitingToJoin = s.waitingToJoin.Load()
	st.Repair = s.repair.Status()
	if peers, err := s.repo.PeerGroups(); err == nil && len(peers) > 0 {
		st.KnownGroups = peers
	}
	if infos, err := s.repo.Sources(); err == nil {
		for _, in := range infos {
			ss := SourceStatus{Name: in.Name, HighSeq: in.HighSeq, LowSeq: in.LowSeq, TrimmedThrough: in.TrimmedThrough, Count: in.Count, Bytes: in.Bytes, Gaps: len(in.Gaps)}
			for i, g := range in.Gaps {
				if i == maxGapsShown {
					break
				}
				ss.GapRanges = append(ss.GapRanges, [2]uint64{g.From, g.To})
			}
			if rs, err := s.repo.Receivers(in.Name); err == nil {
				for _, r := range rs {
					ss.Receivers = append(ss.Receivers, ReceiverStatus{Name: r.Receiver, Consumed: r.Seq})
				}
			}
			st.Sources = append(st.Sources, ss)
		}
	}
	if shut, target := s.gate.state(); shut {
		st.CatchingUp, st.CatchUpTarget = true, target.Index
	}
	if err := s.refusalErr(); err != nil {
		st.State = "refused"
		st.Error = err.Error()
	}
	if e := s.failed.Load(); e != nil {
		st.State = "failed"
		st.Error = (*e).Error()
	}
	return st
}

// fail stops the store after an error it cannot continue from.
func (s *Store) fail(err error) {
	if !s.failed.CompareAndSwap(nil, &err) {
		return
	}
	s.log.Error("store stopping itself", "err", err)
	go s.Close()
}

// Err returns the error that stopped the store, or why it refuses to start
// (ErrNoStoreWithState), if any.
func (s *Store) Err() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return s.refusalErr()
}

// Close stops the store: a leader first hands leadership to another
// member, then raft stops, connections close and files are closed.
func (s *Store) Close() error { return s.stop(true) }

// Abort stops the store without handing over leadership, as close to a
// crash as a store in a shared process can get: the group notices only when
// heartbeats stop. Tests use it; operators use Close.
func (s *Store) Abort() error { return s.stop(false) }

func (s *Store) stop(transfer bool) error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.client.close()
		s.bg.Wait() // the start goroutine has either started raft or given up
		if r := s.raftNode(); r != nil {
			if transfer && r.State() == raft.Leader && s.failed.Load() == nil {
				if err := r.LeadershipTransfer().Error(); err != nil {
					s.log.Info("leadership transfer before stopping did not complete", "err", err)
				}
			}
			if err := r.Shutdown().Error(); err != nil {
				s.closeErr = errors.Join(s.closeErr, err)
			}
		}
		s.rtrans.Close()
		applied := s.repo.AppliedIndex()
		if err := s.closeStorage(); err != nil && !errors.Is(err, repository.ErrClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		if transfer && s.closeErr == nil && s.failed.Load() == nil {
			if err := writeClean(s.cfg.DataDir, applied); err != nil {
				s.closeErr = errors.Join(s.closeErr, fmt.Errorf("mark the store stopped cleanly: %w", err))
			}
		}
		if err := s.lock.Release(); err != nil {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		close(s.done)
	})
	return s.closeErr
}

func (s *Store) closeStorage() error {
	var errs []error
	if s.logStore != nil {
		errs = append(errs, s.logStore.Close())
	}
	if s.repo != nil {
		errs = append(errs, s.repo.Close())
	}
	return errors.Join(errs...)
}

var _ io.Closer = (*Store)(nil)
