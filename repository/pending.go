package repository

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Deferred commits. A bbolt commit costs two fsyncs, and while it runs the
// repository can apply nothing: the next batch's results wait for the
// previous batch's disk writes, though neither needs them. Measured on the
// dev topology at 1,000 msgs/s (BENCH.md), a Publish spent about 1 ms of
// its 4 ms in the leader waiting for the repository's previous commit, and
// the followers' commits made everyone's log fsyncs slower.
//
// So a store may leave batches of publishes applied but uncommitted
// (ApplyDeferred) and commit them together later (Commit). Nothing is
// lost by it: every entry applied was committed in the raft log of a
// quorum first, and applying is deterministic, so a store that stops
// before the commit replays the same entries into the same state and
// results when started again (raft replays everything after the last
// snapshot, and the applied index recorded in the file says where the
// replay starts). What the deferral costs is visibility: reads see only
// committed state, so a message reaches a reader of this store up to one
// commit later, and AppliedIndex lags by as much.
//
// What must commit at once is the caller's rule (storegroup's fsm): any
// batch holding more than publishes, a snapshot (raft may then drop the
// log before it, which the replay needs), Restore and Close. Commit
// rolls nothing back; an error applying a batch rolls back the whole open
// transaction, every batch in it, and the store stops and replays them.

// pending is the write transaction left open across batches.
type pending struct {
	tx      *bolt.Tx
	since   time.Time // when its first batch was applied
	entries int       // raft entries applied to it

	lastIndex, lastTerm uint64
	group               *groupInfo   // the group's identity, if a batch changed it
	low                 uint64       // the oldest log entry its messages refer to
	healed              []damagedKey // damaged messages it replaced (heal.go)
}

// add records a batch applied to the transaction.
func (p *pending) add(lastIndex, lastTerm uint64, group *groupInfo, low uint64, entries int) {
	if p.entries == 0 {
		p.since = time.Now()
	}
	p.entries += entries
	p.lastIndex, p.lastTerm, p.low = lastIndex, lastTerm, low
	if group != nil {
		p.group = group
	}
}

// pendingTx returns the open write transaction, beginning one if none is.
// The caller holds r.wmu, under guard.
func (r *Repo) pendingTx() (*pending, error) {
	if r.commitErr != nil {
		return nil, r.commitErr
	}
	if r.pend != nil {
		return r.pend, nil
	}
	tx, err := r.db.Begin(true)
	if err != nil {
		return nil, err
	}
	r.pend = &pending{tx: tx}
	return r.pend, nil
}

// ApplyDeferred is ApplyDecided without the commit: the batch is applied
// and decided in the open write transaction, which stays open for the
// batches after it until Commit (or ApplyDecided, Close, Restore) commits
// them all at once. Reads do not see it until then.
func (r *Repo) ApplyDeferred(entries []Entry, decided func([]Result)) (results []Result, err error) {
	err = r.writing(func() error {
		results, err = r.applyPending(entries, decided)
		return err
	})
	return results, err
}

// Commit commits the batches ApplyDeferred left open, if any, and makes
// them visible to reads.
func (r *Repo) Commit() error { return r.writing(r.commitLocked) }

// writing runs fn with the file open (r.mu shared: Close and Restore wait)
// and the write transaction to itself (r.wmu), or returns ErrClosed.
func (r *Repo) writing(fn func() error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return ErrClosed
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return fn()
}

// Pending returns how many raft entries are applied but not committed, and
// since when.
func (r *Repo) Pending() (entries int, since time.Time) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.pend == nil {
		return 0, time.Time{}
	}
	return r.pend.entries, r.pend.since
}

// commitLocked commits the open transaction and then updates the caches
// of what is durable. The caller holds r.wmu.
func (r *Repo) commitLocked() error {
	p := r.pend
	if p == nil {
		return r.commitErr
	}
	r.pend = nil
	err := r.guard("commit applied entries", func() error {
		done := false
		defer func() {
			if !done {
				// A fault or panic inside Commit: it has not rolled back,
				// and bbolt's write lock is still held (Close would wait
				// for it forever).
				_ = p.tx.Rollback()
			}
		}()
		err := p.tx.Commit() // on an error it has rolled back itself
		done = true
		return err
	})
	if err != nil {
		// The batches are gone from the file but not from the log: the
		// repository refuses everything from now on, so that nothing is
		// applied over the hole, and the store stops and replays them.
		r.commitErr = fmt.Errorf("commit entries up to %d to %s: %w", p.lastIndex, r.path, err)
		return r.commitErr
	}
	if p.entries == 0 {
		return nil // every batch was skipped: nothing changed
	}
	if p.group != nil {
		r.group.Store(p.group)
	}
	if len(p.healed) > 0 {
		r.clearDamaged(p.healed)
		r.healed.Add(uint64(len(p.healed)))
	}
	if p.lastIndex > r.applied.Load() {
		r.setLowRef(p.low)
		r.appliedTerm.Store(p.lastTerm)
		r.applied.Store(p.lastIndex)
	}
	return nil
}

// rollbackLocked drops the open transaction and every batch in it. The
// caller holds r.wmu.
//
// It is Tx.Rollback, never bbolt's DB.Update: after a panic, Update's
// roll back rebuilds the free list by reading every page (the file is
// opened with NoFreelistSync), which on a file cut short faults again
// inside the deferred call and leaves bbolt's write lock held, so that
// Close waits forever. Rollback only releases the transaction; the
// in-memory free list it may leave behind does not matter, as the file is
// not used again after a fault.
func (r *Repo) rollbackLocked() {
	if r.pend == nil {
		return
	}
	_ = r.pend.tx.Rollback()
	r.pend = nil
}

// Deferrable reports whether a raft entry's command may stay uncommitted
// in the repository for a while (ApplyDeferred): the Publish commands,
// whose results are answered as soon as they are decided and which no one
// reads back at once. Every other command (a registration, a consumption,
// a trim...) is answered after its batch is applied and read back by the
// one who proposed it, so its batch commits at once. data is the entry's
// command bytes; an entry that is not a command (nil) is deferrable.
func Deferrable(data []byte) bool {
	if len(data) == 0 {
		return true
	}
	switch CommandType(data[0]) {
	case CmdPublish, CmdPublishAs, CmdPublishChecksums, CmdPublishAsChecksums, CmdPublishKeyed:
		return true
	}
	return false
}
