package storegroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// Raft calls the FSM on its own goroutine and panics (the whole process) if
// Restore returns an error: a failed restore or a panic during a batch stops
// the store instead, and nothing is applied after it.
func TestFSMFailuresStopTheStoreNotTheProcess(t *testing.T) {
	t.Parallel()
	publish := repository.EncodePublish(repository.Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("x")}})
	cases := []struct {
		name string
		run  func(f *fsm) error // what raft does
		says string
	}{
		{"restore of a damaged stream", func(f *fsm) error {
			if err := f.Restore(io.NopCloser(bytes.NewReader([]byte("not a snapshot")))); err != nil {
				return fmt.Errorf("Restore returned %v to raft, which would panic", err)
			}
			return nil
		}, "restoring a snapshot from the leader"},
		{"an entry of the group a restored store came from", func(f *fsm) error {
			f.restored = restoredEra{From: "old", Index: 5, Term: 100 + RestoredTermStep}
			if _, ok := f.ApplyBatch([]*raft.Log{{Index: 6, Term: 100, Type: raft.LogCommand, Data: publish}})[0].(error); !ok {
				return errors.New("the batch was answered as applied")
			}
			return nil
		}, "restored from a backup of group old at index 5"},
		{"panic inside a batch", func(f *fsm) error {
			f.onApplied = func() { panic("a bug") }
			if _, ok := f.ApplyBatch([]*raft.Log{{Index: 1, Type: raft.LogCommand, Data: publish}})[0].(error); !ok {
				return errors.New("the batch was answered as applied")
			}
			return nil
		}, "panic: a bug"},
		{"panic inside the repository's transaction", func(f *fsm) error {
			f.decided = func([]*raft.Log, []repository.Result) { panic("a bug") }
			if _, ok := f.ApplyBatch([]*raft.Log{{Index: 1, Type: raft.LogCommand, Data: publish}})[0].(error); !ok {
				return errors.New("the batch was answered as applied")
			}
			return nil
		}, "panic while reading"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fatal := make(chan error, 2)
			// As a store wires it: a fault in the repository's file stops the
			// store through OnFault (fileFaulted), anything else through onFatal.
			path := filepath.Join(t.TempDir(), "repo.db")
			repo, err := repository.Open(path, repository.Options{NoSync: true, OnFault: func(err error) { fatal <- err }})
			if err != nil {
				t.Fatal(err)
			}
			defer repo.Close()
			f := &fsm{store: "G1S1", repo: repo, onFatal: func(err error) { fatal <- err }}
			if err := tc.run(f); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-fatal:
				if !strings.Contains(err.Error(), tc.says) || !(strings.Contains(err.Error(), "G1S1") || strings.Contains(err.Error(), path)) {
					t.Fatalf("the store stopped with %v; want it naming the store or the file and saying %q", err, tc.says)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the store was not stopped")
			}
			before := repo.AppliedIndex()
			more := repository.EncodePublish(repository.Publish{Source: "a", FirstSeq: 2, Payloads: [][]byte{[]byte("y")}})
			res := f.ApplyBatch([]*raft.Log{{Index: 2, Type: raft.LogCommand, Data: more}})
			if err, ok := res[0].(error); !ok || !errors.Is(err, ErrStoreFailed) || repo.AppliedIndex() != before {
				t.Fatalf("a batch after the failure: %v, applied index %d (was %d); want it refused", res[0], repo.AppliedIndex(), before)
			}
		})
	}
}
