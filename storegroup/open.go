package storegroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"umstore/dirlock"
	"umstore/internal/boltfile"
	"umstore/repository"
	"umstore/storegroup/clientserver"
	"umstore/storegroup/proposal"
	"umstore/storegroup/raftport"
)

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
	s.sessions = newSessions()
	s.members = newMemberWatch()
	s.metrics = newStoreMetrics(cfg.Name, cfg.Group)
	s.proposer = proposal.New(s.raftNode, cfg.ApplyTimeout, s.metrics.stages)
	if !gateTestUngated {
		s.proposer.Gate = s.gate // levels.go: nothing a member cannot read is proposed
	}
	if err := s.open(ctx); err != nil {
		s.abandon()
		return nil, err
	}
	s.running.Store(true) // from now on a fault in a file stops the store (fileFaulted)
	s.bg.Add(3)
	go func() {
		defer s.bg.Done()
		select {
		case <-lk.Lost():
			s.fail(fmt.Errorf("store %s lost the lease on its data directory %s (another process took it over, or it could not renew in time): stopping without writing more", cfg.Name, cfg.DataDir))
		case <-s.ctx.Done():
		}
	}()
	go func() { defer s.bg.Done(); s.client.Serve(s.ctx) }()
	go func() { defer s.bg.Done(); s.start() }()
	return s, nil
}

// open does what Open must finish before it returns, in order: storage,
// the identity check against the group, the raft transport behind its vote
// gate, and the helpers with the client server's listener. On an error,
// abandon undoes what was done.
func (s *Store) open(ctx context.Context) error {
	if err := s.openStorage(); err != nil {
		return err
	}
	logRetentionFit(s.log, s.cfg.DataDir, s.cfg.RetentionMaxBytes)
	if err := s.checkIdentity(ctx); err != nil {
		return err
	}
	if err := s.openTransport(); err != nil {
		return err
	}
	return s.wireHelpers()
}

// abandon undoes a failed open: it closes the transport and the files that
// were opened and releases the data directory's lock.
func (s *Store) abandon() {
	if s.port != nil {
		s.port.Close()
	}
	s.closeStorage()
	s.cancel()
	s.lock.Release()
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
	err = readDamageMark(dir)
	if err == nil {
		err = s.openFiles()
	}
	if err != nil && isDamage(err) {
		// Damaged files are never deleted: move them aside and rejoin empty.
		s.closeStorage()
		s.repo, s.logStore = nil, nil
		file := fileOf(err)
		backup, berr := BackupDataDir(dir)
		if berr != nil {
			return fmt.Errorf("%w; moving the damaged files to a backup also failed: %v; move the data directory %s aside by hand and start again", err, berr, dir)
		}
		s.log.Error("damaged files: the store cannot use "+filepath.Base(file)+"; it moved its data directory's files to a numbered backup (nothing deleted) and rejoins its group empty, catching up from the other members; the other stores are not affected. Once it has caught up, the backup can be removed; `umstored recover --list` shows what it holds",
			"file", file, "backup", backup, "err", err)
		s.lastStop = StopNew
		err = s.openFiles()
	}
	return err
}

// openFiles opens the repository and raft's log and snapshot stores, each
// bbolt file checked before it is mapped and guarded while it is used
// (damage.go), and checks that the snapshots cover what the log needs.
func (s *Store) openFiles() error {
	dir := s.cfg.DataDir
	kind, kept, err := logStoreFor(dir, s.cfg.LogStore)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.cfg.Name, err)
	}
	if kept {
		s.log.Warn("the store keeps the raft log store its data directory has; the setting applies to new stores only (to move this one, move its data directory aside: it rejoins empty and catches up)", "log_store", kind, "setting", s.cfg.LogStore)
	}
	repoPath, raftPath := filepath.Join(dir, "repo.db"), logPath(dir, kind)
	var raw rawLogStore
	if kind == LogStoreBoltDB {
		raw, err = openRaftLog(raftPath)
	} else {
		raw, err = openWALLog(dir, s.hlog.Named("wal"))
	}
	if err != nil {
		return inFile(raftPath, fmt.Errorf("open raft log of store %s: %w", s.cfg.Name, withFaultAdvice(err, dir)))
	}
	s.logKind = kind
	s.logStore = &guardedLogStore{
		log:  raw,
		file: &boltfile.Guarded{Path: raftPath, What: "raft log", OnFault: s.fileFaulted(raftPath)},
		lock: s.lock,
		onWriteError: func(err error) {
			s.fail(fmt.Errorf("store %s cannot write its raft log in %s: %w; it stopped without skipping anything: fix the cause and start it again, it catches up", s.cfg.Name, dir, err))
		},
		onUnreadable: func(err error) { s.fileFailed(raftPath, err, true) },
		stages:       s.metrics.stages,
	}
	// Over raft-wal the repository is an index over the log: each payload
	// is written once, in the log, which keeps what retention keeps.
	// raft.db stores keep their payloads in repo.db, as they always did.
	repoOpts := repository.Options{NoSync: s.cfg.NoSync, OnFault: s.fileFaulted(repoPath)}
	if kind == LogStoreWAL {
		repoOpts.Log = s.logStore
	}
	s.repo, err = repository.Open(repoPath, repoOpts)
	if err != nil {
		return inFile(repoPath, fmt.Errorf("open repository of store %s: %w", s.cfg.Name, withFaultAdvice(err, dir)))
	}
	if kind == LogStoreWAL {
		s.logStore.retained, s.logStore.applied = s.repo.LowestLogRef, s.repo.AppliedIndex
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, s.hlog.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("open snapshot store of store %s: %w", s.cfg.Name, err)
	}
	s.snaps = &snapshotStore{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots"), repo: s.repo, metrics: s.metrics, received: &s.received}
	s.fsm = &fsm{store: s.cfg.Name, repo: s.repo, onFatal: s.fail, onApplied: s.notifyApplied, decided: s.proposer.DecidedBatch, commitEvery: s.cfg.RepositoryCommitInterval, followerCommitEvery: s.cfg.FollowerCommitInterval, leading: s.leaderReady.Load, metrics: s.metrics, lock: s.lock, received: &s.received, emulateLevel: s.cfg.emulateLevel,
		onLogDamaged:  func(err error) { s.fileFailed(raftPath, err, true) },
		onRepoDamaged: func(err error) { s.fileFailed(repoPath, err, true) }}
	if s.fsm.restored, err = readRestoredEra(dir); err != nil {
		return err
	}
	if err := s.checkSnapshotsCoverLog(); err != nil {
		return err
	}
	if err := s.checkLogHoldsRefs(); err != nil {
		return err
	}
	if err := s.dropLogBehindSnapshot(); err != nil {
		return err
	}
	return s.catchUpFromSnapshot()
}

// openRaftLog opens raft.db: checked before it is mapped, and with a fault
// while bbolt reads it at open returned as an error.
func openRaftLog(path string) (*raftboltdb.BoltStore, error) {
	// As the repository: the freelist is rebuilt at open instead of written
	// by every commit, and kept as a map. Commits stay fsynced.
	opts := &bbolt.Options{
		Timeout:        10 * time.Second,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	}
	var bolt *raftboltdb.BoltStore
	err := boltfile.Open(path, "open the raft log", opts, func(o *bbolt.Options) (err error) {
		bolt, err = raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: o})
		return err
	})
	return bolt, err
}

// withFaultAdvice adds what to do to a panic in the caller's code while
// opening a file (a fault that says the file is damaged is handled by
// moving the files aside).
func withFaultAdvice(err error, dir string) error {
	var f *boltfile.Fault
	if errors.As(err, &f) && !f.Damaged() {
		return fmt.Errorf("%w; the file is likely damaged: move the data directory %s aside and start again, the store rejoins its group empty", err, dir)
	}
	return err
}

// catchUpFromSnapshot restores the latest local snapshot if the repository
// is behind it. Raft runs with NoSnapshotRestoreOnStart and replays only the
// entries after its latest snapshot, so a repository that is behind the
// snapshot (it should never be: snapshots are taken from durable state)
// would otherwise silently miss entries.
func (s *Store) catchUpFromSnapshot() error {
	// A staged snapshot (snapstore.go) is installed below if the latest
	// snapshot names it and the repository is behind; any other is stale.
	defer s.repo.RemoveStaged(nil)
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

// dropLogBehindSnapshot empties a raft-wal log that ends before the latest
// snapshot. After installing a snapshot raft empties the log (raft-wal
// refuses gaps); a store that stopped between the two would otherwise find
// raft appending after the snapshot, past a gap, and every append refused.
// Every entry of such a log is older than the snapshot, and the repository,
// restored from it, refers to none of them.
func (s *Store) dropLogBehindSnapshot() error {
	if s.logKind != LogStoreWAL {
		return nil
	}
	metas, err := s.snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	first, err := s.logStore.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.logStore.LastIndex()
	if err != nil || last == 0 || last >= metas[0].Index {
		return err
	}
	if low, _, err := s.repo.LogRefRange(); err != nil || low != 0 {
		return err // references are checked against the log above
	}
	s.log.Warn("the raft log ends before the latest snapshot (a stop between installing it and clearing the log): clearing the log", "log_first", first, "log_last", last, "snapshot", metas[0].Index)
	return s.logStore.DeleteRange(first, last)
}

// openTransport listens on the raft port, behind the vote gate.
func (s *Store) openTransport() error {
	cfg := s.cfg
	self := cfg.self()
	def := DefaultConfig()
	port, err := raftport.Open(raftport.Config{
		Name:    cfg.Name,
		Group:   cfg.Group,
		Members: cfg.Members,
		// Where the members listen now (members_book.go), for the peers'
		// checks and for raft's transport.
		Current:   s.addressBook().members,
		Addresses: s.addressBook(),

		Bind:         self.RaftAddr,
		LocalIP:      cfg.LocalIP,
		ServerTLS:    cfg.Security.ServerTLS,
		ClientTLS:    cfg.Security.ClientTLS,
		MemberSecret: cfg.Security.MemberSecret,
		Dial:         cfg.Dial,

		HandshakeTimeout: cmp.Or(cfg.RaftHandshakeTimeout, def.RaftHandshakeTimeout),
		IdleTimeout:      cmp.Or(cfg.RaftIdleTimeout, def.RaftIdleTimeout),

		Log:     s.log,
		HLog:    s.hlog,
		Refused: func(r raftport.Refusal) { s.metrics.refusedPeers[r].Add(1) },
	})
	if err != nil {
		return err
	}
	s.port = port
	port.CheckEntries(s.entryCheck())
	return nil
}

// wireHelpers builds the store's helpers, each with only what it needs of
// the store, and the client server's listener. It runs once the storage is
// final (the identity check may have replaced it).
func (s *Store) wireHelpers() error {
	cfg := s.cfg
	repairDialer := s.dialer(2 * time.Second)
	repairDialer.Client = "repair " + cfg.Name
	s.repair = newRepairer(repairDeps{
		log:        s.log,
		repo:       s.repo,
		proposer:   s.proposer,
		metrics:    s.metrics,
		isLeader:   s.IsLeader,
		groups:     cfg.OtherGroups,
		addrs:      s.addressBook().clientAddrs, // members_book.go
		dialer:     repairDialer,
		name:       cfg.Name,
		group:      cfg.Group,
		members:    cfg.Members,
		interval:   cfg.RepairInterval,
		rate:       cfg.RepairBytesPerSecond,
		batchCount: cfg.RepairBatchCount,
		batchBytes: cfg.RepairBatchBytes,
	})
	s.snaps.intact = s.repair.damage.copyForSnapshot
	s.retain = newRetainer(retainDeps{
		log:         s.log,
		repo:        s.repo,
		proposer:    s.proposer,
		isLeader:    s.IsLeader,
		maxBytes:    cfg.RetentionMaxBytes,
		maxMessages: cfg.RetentionMaxMessages,
		maxAge:      cfg.RetentionMaxAge,
		interval:    cfg.RetentionInterval,
		allowPaced:  cfg.AllowReceiverPacedPersistence,
	})
	s.receivers = newReceiverSessions()
	s.pacer = clientserver.NewPacer(s.repo, s.flushRepository, s.retain.releaseConsumed, s.log, cfg.RetentionMaxBytes, cfg.RetentionMaxMessages)
	client, err := s.newClient() // client.go
	if err != nil {
		return err
	}
	s.client = client
	return nil
}
