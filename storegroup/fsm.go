package storegroup

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/storegroup/stagetime"
)

// fsm adapts a repository to raft's BatchingFSM. Raft calls ApplyBatch,
// Snapshot and Restore from one goroutine; Persist runs concurrently with
// ApplyBatch, which the repository's read transactions allow.
//
// When the repository cannot commit a batch (disk full, I/O error, a fault
// reading its mapped file), the fsm records the failure, refuses every
// later batch and every snapshot, and calls onFatal so the store shuts
// down. Its applied index stays where it was, so a restarted store replays
// the refused entries instead of skipping them. A panic inside a batch is
// such a failure too: raft's FSM goroutine is raft's, and a panic there
// would end the whole process.
type fsm struct {
	store     string // the store's name, for its errors
	repo      *repository.Repo
	onFatal   func(error)
	onApplied func() // after every applied batch: wakes subscriptions
	// decided, if set, gets every batch's results before the repository
	// commits it (see proposals).
	decided func(logs []*raft.Log, results []repository.Result)
	metrics *storeMetrics
	// received counts the entries applied and their payload bytes (nil:
	// not counted), for a catching-up store's progress.
	received *received
	lock     interface{ Check() error } // the data directory's lock: checked before every write batch
	// onLogDamaged hears of an entry whose payloads do not match the
	// checksums it carries: this store's copy of the log is damaged, and
	// its files are marked so that it rejoins.
	onLogDamaged func(error)
	// onRepoDamaged hears of a batch the repository refused because what
	// it holds is not what it wrote (a message run or a count that does
	// not decode, repository.ErrFormat): its file is damaged, and the
	// files are marked so that the next start moves them aside and the
	// store rejoins, instead of replaying into the same damage forever.
	onRepoDamaged func(error)

	// emulateLevel is Config.emulateLevel: tests only (levels.go).
	emulateLevel int

	// commitEvery is Config.RepositoryCommitInterval: how long batches of
	// publishes may stay applied but uncommitted (fsm_commit.go).
	commitEvery time.Duration
	// followerCommitEvery (Config.FollowerCommitInterval) takes
	// commitEvery's place while leading, when set, reports that this store
	// does not serve as its group's leader.
	followerCommitEvery time.Duration
	leading             func() bool

	// restored, for a store restored from a backup (restore.go), is
	// where the restored group's own log begins: an entry past its index
	// with a lower term comes from a store of the group the backup was
	// taken from, and is never applied.
	restored restoredEra

	mu     sync.Mutex
	failed error

	// commitMu orders every change to what the repository holds applied
	// but uncommitted with the bookkeeping of it: a batch applied, a
	// commit, the idle timer (fsm_commit.go). Without it a commit could
	// stop the timer a batch applied meanwhile had just armed, and leave
	// that batch uncommitted until the next one came.
	commitMu sync.Mutex
	// pendingBytes are the command bytes applied but not committed;
	// idleCommit, when armed, commits them once no batch came for
	// commitEvery. Both under commitMu.
	pendingBytes int
	idleCommit   *time.Timer
	idleArmed    bool
}

var _ raft.BatchingFSM = (*fsm)(nil)

// ApplyBatch applies committed entries in one repository transaction. The
// response for each entry is a *repository.Result, or an error.
func (f *fsm) ApplyBatch(logs []*raft.Log) (out []any) {
	defer func() {
		if v := recover(); v != nil {
			out = f.fail(logs, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}
	}()
	out = make([]any, len(logs))
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	if failed != nil {
		for i := range out {
			out[i] = failed
		}
		return out
	}
	if err := f.restored.check(logs); err != nil {
		return f.fail(logs, err)
	}
	entries := make([]repository.Entry, len(logs))
	payload := 0
	for i, l := range logs {
		entries[i] = repository.Entry{Index: l.Index, Term: l.Term}
		if l.Type == raft.LogCommand {
			entries[i].Data = l.Data
			payload += len(l.Data)
		}
	}
	f.received.applied(len(logs), payload)
	start := time.Now()
	var err error
	if f.lock != nil {
		err = f.lock.Check()
	}
	if err == nil {
		err = emulatedLevelCheck(f.emulateLevel, entries)
	}
	var results []repository.Result
	if err == nil {
		decided := func(results []repository.Result) {
			f.stages().Since(stagetime.Decide, start)
			if f.decided != nil {
				f.decided(logs, results)
			}
		}
		results, err = f.apply(logs, entries, decided)
	}
	if err != nil {
		return f.fail(logs, err)
	}
	for i := range results {
		out[i] = &results[i]
		if p := results[i].Publish; p != nil && f.metrics != nil {
			f.metrics.stored.Add(uint64(p.Stored))
			f.metrics.duplicates.Add(uint64(p.Duplicates))
			f.metrics.conflicts.Add(uint64(p.Conflicts))
		}
	}
	if f.metrics != nil {
		f.metrics.observeApply(len(entries), time.Since(start))
	}
	return out
}

// stages returns the store's stage timer, nil (timing nothing) without
// metrics.
func (f *fsm) stages() *stagetime.Timer {
	if f.metrics == nil {
		return nil
	}
	return f.metrics.stages
}

// fail records that the batch could not be applied, stops the store, and
// answers every entry of the batch with the error.
func (f *fsm) fail(logs []*raft.Log, cause error) []any {
	logDamaged := errors.Is(cause, repository.ErrCorrupt) && f.onLogDamaged != nil
	repoDamaged := errors.Is(cause, repository.ErrFormat) && !errors.Is(cause, repository.ErrNewerFormat) &&
		f.onRepoDamaged != nil && f.repo.Fault() == nil
	err := fmt.Errorf("store %s: %w: entries %d..%d: %v", f.store, ErrStoreFailed, logs[0].Index, logs[len(logs)-1].Index, cause)
	if !logDamaged && !repoDamaged {
		// Damaged files get fileFailed's advice (they are moved aside).
		err = fmt.Errorf("%w; fix the cause and start the store again: it replays them", err)
	}
	f.mu.Lock()
	f.failed = err
	f.mu.Unlock()
	// A fault in the repository's file has stopped the store already, with
	// a message naming the file (Options.OnFault, fileFaulted).
	switch {
	case logDamaged:
		go f.onLogDamaged(err)
	case repoDamaged:
		go f.onRepoDamaged(err)
	case f.onFatal != nil && f.repo.Fault() == nil:
		go f.onFatal(err)
	}
	out := make([]any, len(logs))
	for i := range out {
		out[i] = err
	}
	return out
}

// Apply implements raft.FSM for single entries.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// Snapshot records the applied index and term: the repository file holds
// that state durably (each batch was committed before ApplyBatch returned),
// so the snapshot refers to it instead of copying it (see snapstore.go).
// Raft calls it between batches, so the repository is exactly at the index
// raft records for the snapshot.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	if failed != nil {
		// A snapshot now would claim an index the repository never reached.
		return nil, failed
	}
	// The snapshot refers to the repository file, and raft may drop the
	// log up to it: what is applied must be durable first.
	if err := f.flush(); err != nil {
		return nil, err
	}
	return &refSnapshot{index: f.repo.AppliedIndex(), term: f.repo.AppliedTerm(), metrics: f.metrics}, nil
}

// Restore replaces the repository with a snapshot's copy (one a leader
// sent). It never returns an error: raft panics on one, ending the process
// and every store in it. When the restore fails (or panics), the fsm fails
// as for a batch, and the store stops; the snapshot is kept whole in the
// store's snapshot store, and the next start restores it
// (catchUpFromSnapshot) or finds it damaged. Until the store has stopped,
// raft believes the restore done, which is safe: everything raft then
// claims to hold is in that snapshot or its own log, both on disk, and the
// fsm applies nothing more.
func (f *fsm) Restore(rc io.ReadCloser) (err error) {
	defer rc.Close()
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	if failed != nil {
		return nil // stopping: nothing is applied any more
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
		if err != nil {
			err = fmt.Errorf("store %s: %w: restoring a snapshot from the leader: %v; start the store again: it restores the snapshot it kept, or finds its files damaged and rejoins empty", f.store, ErrStoreFailed, err)
			f.mu.Lock()
			f.failed = err
			f.mu.Unlock()
			if f.onFatal != nil {
				go f.onFatal(err)
			}
		}
		err = nil
	}()
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	f.pendingBytes = 0 // Restore drops what was uncommitted
	return f.repo.Restore(rc)
}
