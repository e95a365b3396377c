package storegroup

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/storegroup/stagetime"
)

// When the fsm commits the repository. A batch made only of publishes
// (repository.Deferrable) is applied and decided, and its early answers
// given, without a commit: the commit, two fsyncs, waits until the oldest
// uncommitted batch is commitEvery old (followerCommitEvery on a store that
// does not lead; checked as each batch comes, and by a timer once batches
// stop), or until maxPendingBytes of commands wait.
// Meanwhile the next batches are decided without waiting for the disk, and
// one commit covers them all. Any other batch commits at once, with
// whatever waited before it: a Register's or a Consumed's answer comes
// after its batch is applied, and whoever asked may read the repository
// next. So do a snapshot (fsm.Snapshot), a restore and closing the
// repository. Why nothing acknowledged is lost by the wait: repository's
// pending.go.
//
// Readers (subscriptions, Fetch, status) see only what is committed: they
// are woken (onApplied) after each commit, not after each batch.

// maxPendingBytes bounds the command bytes left uncommitted: with raft.db
// stores the repository holds the payloads, which bbolt keeps in memory
// until the commit.
const maxPendingBytes = 8 << 20

// apply applies a batch (entries are logs as the repository takes them)
// and commits it now or later, as above.
func (f *fsm) apply(logs []*raft.Log, entries []repository.Entry, decided func([]repository.Result)) ([]repository.Result, error) {
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	every := f.interval()
	size, deferrable := 0, every > 0
	for _, l := range logs {
		size += len(l.Data)
		if l.Type == raft.LogCommand && !repository.Deferrable(l.Data) {
			deferrable = false
		}
	}
	if !deferrable {
		committing := time.Now()
		results, err := f.repo.ApplyDecided(entries, decided)
		if err == nil {
			f.committed(committing)
		}
		return results, err
	}
	results, err := f.repo.ApplyDeferred(entries, decided)
	if err != nil {
		return nil, err
	}
	f.pendingBytes += size
	due := f.pendingBytes >= maxPendingBytes
	if _, since := f.repo.Pending(); !due && !since.IsZero() && time.Since(since) < every {
		f.armIdleCommit(every)
		return results, nil
	}
	return results, f.commit()
}

// commit commits what the repository holds uncommitted, if anything. The
// caller holds f.commitMu.
func (f *fsm) commit() error {
	start := time.Now()
	if err := f.repo.Commit(); err != nil {
		return err
	}
	f.committed(start)
	return nil
}

// committed records a commit that began at start: nothing is left
// uncommitted, so the idle timer is stopped, and readers are woken. The
// caller holds f.commitMu.
func (f *fsm) committed(start time.Time) {
	f.stages().Since(stagetime.RepoCommit, start)
	f.pendingBytes = 0
	if f.idleArmed {
		f.idleCommit.Stop()
		f.idleArmed = false
	}
	if f.onApplied != nil {
		f.onApplied()
	}
}

// interval is how long batches may wait for their commit now: the
// leader's commitEvery, or followerCommitEvery while this store does not
// lead (readers are the leader's: Config.FollowerCommitInterval). The
// leader's own wait starts once its leadership is ready (leader.go), after
// the flush that commits what it applied as a follower.
func (f *fsm) interval() time.Duration {
	if f.leading != nil && !f.leading() {
		return f.followerCommitEvery
	}
	return f.commitEvery
}

// armIdleCommit makes sure the timer that commits a quiet repository runs:
// every after the first batch it waits for, not the last. The caller holds
// f.commitMu.
func (f *fsm) armIdleCommit(every time.Duration) {
	switch {
	case f.idleArmed:
	case f.idleCommit == nil:
		f.idleCommit = time.AfterFunc(every, f.commitIdle)
	default:
		f.idleCommit.Reset(every)
	}
	f.idleArmed = true
}

// commitIdle is the idle timer's: it commits what the last batches left.
func (f *fsm) commitIdle() {
	defer func() {
		// The timer's goroutine is the process's: a panic here would end
		// every store in it.
		if v := recover(); v != nil {
			f.failCommit(fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}
	}()
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	f.idleArmed = false
	_ = f.flushLocked()
}

// flush commits what the repository holds uncommitted, for those who must
// read it next: the idle timer, a snapshot, a new leader, the pacing of a
// publisher. A commit that fails stops the store, as a failed batch does.
func (f *fsm) flush() error {
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	return f.flushLocked()
}

// flushLocked is flush for a caller that holds f.commitMu.
func (f *fsm) flushLocked() error {
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	if failed != nil {
		return failed
	}
	err := f.commit()
	if err != nil && !errors.Is(err, repository.ErrClosed) && f.repo.Fault() == nil {
		// (A fault stopped the store already, with a message naming the file.)
		f.failCommit(err)
	}
	return err
}

// failCommit stops the store after a commit of batches applied (and
// answered) before failed: they are in the raft log, and replayed when the
// store starts again.
func (f *fsm) failCommit(cause error) {
	err := fmt.Errorf("store %s: %w: %v; fix the cause and start the store again: it replays the entries not committed", f.store, ErrStoreFailed, cause)
	f.mu.Lock()
	if f.failed == nil {
		f.failed = err
	}
	f.mu.Unlock()
	if f.onFatal != nil {
		go f.onFatal(err)
	}
}

// flushRepository commits what the repository applied and left
// uncommitted (fsm.flush), for readers that need it now.
func (s *Store) flushRepository() error { return s.fsm.flush() }
