package storegroup

import (
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// A batch of publishes is decided at once but committed, and shown to
// readers, only when the commit interval has passed (by the next batch or
// the idle timer); any other command commits at once with what waited
// before it, and so does a snapshot, which raft may follow by dropping the
// log the replay would need.
func TestFSMDefersOnlyPublishCommits(t *testing.T) {
	t.Parallel()
	repo := openScratchRepo(t)
	var woken atomic.Int32
	var decided atomic.Int32
	f := &fsm{store: "G1S1", repo: repo, commitEvery: 200 * time.Millisecond,
		onApplied: func() { woken.Add(1) },
		decided:   func(logs []*raft.Log, _ []repository.Result) { decided.Add(int32(len(logs))) }}
	publish := func(index, seq uint64) *raft.Log {
		return &raft.Log{Index: index, Type: raft.LogCommand, Data: repository.EncodePublish(repository.Publish{Source: "a", FirstSeq: seq, Payloads: [][]byte{[]byte("x")}})}
	}
	apply := func(logs ...*raft.Log) {
		t.Helper()
		for _, r := range f.ApplyBatch(logs) {
			if err, ok := r.(error); ok {
				t.Fatal(err)
			}
		}
	}
	waitApplied := func(want uint64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for repo.AppliedIndex() != want {
			if time.Now().After(deadline) {
				t.Fatalf("applied index %d after %v, want %d", repo.AppliedIndex(), within, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	apply(publish(1, 1))
	if decided.Load() != 1 || repo.AppliedIndex() != 0 || woken.Load() != 0 {
		t.Fatalf("after one publish: decided %d, applied %d, readers woken %d; want 1 decided, nothing committed", decided.Load(), repo.AppliedIndex(), woken.Load())
	}
	waitApplied(1, 5*time.Second) // the idle timer
	if woken.Load() != 1 {
		t.Fatalf("readers woken %d times by the idle commit, want 1", woken.Load())
	}

	apply(publish(2, 2))
	apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: repository.EncodeRegister(repository.Register{Source: "b", Session: "s"})})
	if repo.AppliedIndex() != 3 {
		t.Fatalf("a Register's batch left the applied index at %d, want 3 committed at once", repo.AppliedIndex())
	}

	apply(publish(4, 3))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ref := snap.(*refSnapshot); ref.index != 4 || repo.AppliedIndex() != 4 {
		t.Fatalf("snapshot at %d, applied %d; want both 4", ref.index, repo.AppliedIndex())
	}

	// Without an interval every batch commits.
	f.commitEvery = 0
	apply(publish(5, 4))
	if repo.AppliedIndex() != 5 {
		t.Fatalf("applied %d without an interval, want 5", repo.AppliedIndex())
	}
}

// No batch waits for the next one to be committed: when batches come just
// as the idle timer commits the ones before them, each is still committed
// within a bound of being applied. (A commit once stopped the timer a batch
// applied during that commit had armed: the batch stayed uncommitted, and
// unseen by readers, until another came.)
func TestFSMIdleCommitCoversBatchesAppliedDuringACommit(t *testing.T) {
	t.Parallel()
	repo := openScratchRepo(t)
	every := time.Millisecond
	f := &fsm{store: "G1S1", repo: repo, commitEvery: every}
	rng := rand.New(rand.NewPCG(1, 2))
	index := uint64(0)
	for round := 0; round < 300; round++ {
		for k := 0; k < 2; k++ {
			index++
			l := &raft.Log{Index: index, Type: raft.LogCommand, Data: repository.EncodePublish(repository.Publish{Source: "a", FirstSeq: index, Payloads: [][]byte{[]byte("x")}})}
			if err, ok := f.ApplyBatch([]*raft.Log{l})[0].(error); ok {
				t.Fatal(err)
			}
			// About when the idle timer fires for the first batch.
			time.Sleep(every/2 + time.Duration(rng.Int64N(int64(every))))
		}
		deadline := time.Now().Add(2 * time.Second)
		for repo.AppliedIndex() != index {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: batch %d applied but not committed after 2s (committed through %d)", round, index, repo.AppliedIndex())
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// openScratchRepo opens a repository without fsync in a temporary
// directory, closed when the test ends.
func openScratchRepo(t *testing.T) *repository.Repo {
	t.Helper()
	repo, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	return repo
}

// A store that does not lead waits followerCommitEvery (here longer than
// the test) before committing its publishes; once it leads, commitEvery
// holds again (here 0: every batch commits, with whatever waited).
func TestFollowerCommitsAtItsOwnInterval(t *testing.T) {
	t.Parallel()
	repo := openScratchRepo(t)
	var leading atomic.Bool
	f := &fsm{store: "G1S2", repo: repo, commitEvery: 0, followerCommitEvery: time.Hour, leading: leading.Load}
	apply := func(index, seq uint64) {
		t.Helper()
		l := &raft.Log{Index: index, Type: raft.LogCommand, Data: repository.EncodePublish(repository.Publish{Source: "a", FirstSeq: seq, Payloads: [][]byte{[]byte("x")}})}
		for _, r := range f.ApplyBatch([]*raft.Log{l}) {
			if err, ok := r.(error); ok {
				t.Fatal(err)
			}
		}
	}
	apply(1, 1)
	apply(2, 2)
	if n, _ := repo.Pending(); repo.AppliedIndex() != 0 || n == 0 {
		t.Fatalf("following: applied %d with %d batches pending, want nothing committed", repo.AppliedIndex(), n)
	}
	leading.Store(true)
	apply(3, 3)
	if n, _ := repo.Pending(); repo.AppliedIndex() != 3 || n != 0 {
		t.Fatalf("leading: applied %d with %d batches pending, want 3 committed", repo.AppliedIndex(), n)
	}
}
