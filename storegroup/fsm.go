package storegroup

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// fsm adapts a repository to raft's BatchingFSM. Raft calls ApplyBatch,
// Snapshot and Restore from one goroutine; Persist runs concurrently with
// ApplyBatch, which the repository's read transactions allow.
//
// When the repository cannot commit a batch (disk full, I/O error), the fsm
// records the failure, refuses every later batch and every snapshot, and
// calls onFatal so the store shuts down. Its applied index stays where it
// was, so a restarted store replays the refused entries instead of skipping
// them.
type fsm struct {
	repo      *repository.Repo
	onFatal   func(error)
	onApplied func() // after every applied batch: wakes subscriptions
	// decided, if set, gets every batch's results before the repository
	// commits it (see proposals).
	decided func(logs []*raft.Log, results []repository.Result)
	metrics *storeMetrics
	lock    interface{ Check() error } // the data directory's lock: checked before every write batch

	mu     sync.Mutex
	failed error
}

var _ raft.BatchingFSM = (*fsm)(nil)

// ApplyBatch applies committed entries in one repository transaction. The
// response for each entry is a *repository.Result, or an error.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	if failed != nil {
		for i := range out {
			out[i] = failed
		}
		return out
	}
	entries := make([]repository.Entry, len(logs))
	for i, l := range logs {
		entries[i] = repository.Entry{Index: l.Index, Term: l.Term}
		if l.Type == raft.LogCommand {
			entries[i].Data = l.Data
		}
	}
	start := time.Now()
	var err error
	if f.lock != nil {
		err = f.lock.Check()
	}
	var results []repository.Result
	if err == nil {
		var decided func([]repository.Result)
		if f.decided != nil {
			decided = func(results []repository.Result) { f.decided(logs, results) }
		}
		results, err = f.repo.ApplyDecided(entries, decided)
	}
	if err != nil {
		err = fmt.Errorf("%w: entries %d..%d: %v; fix the cause and start the store again: it replays them", ErrStoreFailed, logs[0].Index, logs[len(logs)-1].Index, err)
		f.mu.Lock()
		f.failed = err
		f.mu.Unlock()
		if f.onFatal != nil {
			go f.onFatal(err)
		}
		for i := range out {
			out[i] = err
		}
		return out
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
	if f.onApplied != nil {
		f.onApplied()
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
	return &refSnapshot{index: f.repo.AppliedIndex(), term: f.repo.AppliedTerm(), metrics: f.metrics}, nil
}

// Restore replaces the repository with a snapshot's copy.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return f.repo.Restore(rc)
}
