package storegroup

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// startRaft builds the raft node over the store's FSM, log, snapshots and
// gated transport, and bootstraps a brand-new group if this store was
// chosen to.
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
	stable := raftLogStore{s.logStore}
	logs := newLogCache(stable, logCacheMaxEntries, logCacheMaxBytes)
	s.entryDamage.cache.Store(logs)
	r, err := s.newRaft(rc, logs, stable)
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
	s.raftSince = time.Now()
	s.raftMu.Unlock()
	close(s.started)
	return nil
}

// newRaft is raft.NewRaft, which panics (here, on the store's goroutine)
// when its log misses an entry it reads to find the configuration: the log
// has a hole, which only damage makes. The panic becomes an error, and the
// files are marked damaged so that the next start moves them aside.
func (s *Store) newRaft(rc *raft.Config, logs raft.LogStore, stable raft.StableStore) (r *raft.Raft, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("raft could not read its log %s: %v; the log is damaged: start the store again, it moves its files to a numbered backup and rejoins its group empty", s.logStore.file.Path, v)
			if werr := writeDamageMark(s.cfg.DataDir, s.logStore.file.Path, err); werr != nil {
				err = fmt.Errorf("%w (marking the files damaged failed too: %v; move the data directory %s aside by hand)", err, werr, s.cfg.DataDir)
			} else {
				err = fmt.Errorf("%w: %w", ErrFilesMarkedDamaged, err)
			}
		}
	}()
	return raft.NewRaft(rc, s.fsm, logs, stable, s.snaps, s.port)
}
