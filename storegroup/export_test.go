package storegroup

import (
	"errors"

	"github.com/hashicorp/raft"
)

// TransferLeadership hands this leader's leadership to the member to, for
// tests that move leadership back and forth without stopping a store.
func (s *Store) TransferLeadership(to Member) error {
	r := s.raftNode()
	if r == nil {
		return errors.New("raft is not running")
	}
	return r.LeadershipTransferToServer(raft.ServerID(to.Name), raft.ServerAddress(to.RaftAddr)).Error()
}

// LogBounds returns the first and last index of the store's raft log and
// the kind of its log store, for tests of compaction and log stores.
func (s *Store) LogBounds() (first, last uint64, kind string, err error) {
	if first, err = s.logStore.FirstIndex(); err != nil {
		return 0, 0, "", err
	}
	last, err = s.logStore.LastIndex()
	return first, last, s.logKind, err
}

// SetRetentionStep makes one Trim drop at most n messages, for tests of a
// backlog larger than a step; the returned function restores the default.
func SetRetentionStep(n uint64) (restore func()) {
	old := retentionStep
	retentionStep = n
	return func() { retentionStep = old }
}

// EmulateLevel makes the store cfg configures behave as a binary of format
// level level: it announces it to its leader and stops on any entry of a
// command type newer than it that is not marked ignorable (skipping the
// ignorable ones), as that binary would.
func EmulateLevel(cfg *Config, level int) { cfg.emulateLevel = level }

// Ungate lets the store's proposer write any command type whatever the
// group's active level, for the test that shows the gate is what keeps an
// older member running.
func (s *Store) Ungate() { s.ungated.Store(true) }

// Propose proposes cmd through the store's proposer (its gate included)
// and waits for it to apply, for tests that write one command by hand.
func (s *Store) Propose(cmd []byte) error { return s.proposer.Propose(cmd).Error() }

// SnapshotNow makes the store's raft node take a snapshot.
func (s *Store) SnapshotNow() error {
	r := s.raftNode()
	if r == nil {
		return errors.New("raft is not running")
	}
	return r.Snapshot().Error()
}
