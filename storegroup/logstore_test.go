package storegroup

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"

	"umstore/internal/boltfile"
)

// lockStub is a data-directory lock whose Check returns err.
type lockStub struct{ err error }

func (l lockStub) Check() error          { return l.err }
func (l lockStub) Lost() <-chan struct{} { return nil }
func (l lockStub) Release() error        { return nil }
func (l lockStub) HolderID() string      { return "test" }

// logFixture writes a raft.db with entries 1..200 (entry 7 replaced by
// bytes that do not decode) and opens it as a store would.
func logFixture(t *testing.T, lock lockStub) (g *guardedLogStore, path string, unreadable, faults *[]error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "raft.db")
	bolt, err := openRaftLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 200; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: make([]byte, 1000)})
	}
	if err := bolt.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	bolt.Close()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("logs")).Put(binary.BigEndian.AppendUint64(nil, 7), []byte{0xc1, 0xc1, 0xc1})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if bolt, err = openRaftLog(path); err != nil {
		t.Fatal(err)
	}
	unreadable, faults = new([]error), new([]error)
	g = &guardedLogStore{
		log:          bolt,
		file:         &boltfile.Guarded{Path: path, What: "raft log", OnFault: func(err error) { *faults = append(*faults, err) }},
		lock:         lock,
		onWriteError: func(error) {},
		onUnreadable: func(err error) { *unreadable = append(*unreadable, err) },
	}
	t.Cleanup(func() { g.Close() })
	return g, path, unreadable, faults
}

// onItsOwnGoroutine runs fn as raft would, on a goroutine of its own, and
// reports whether fn returned (false: the goroutine ended inside it).
func onItsOwnGoroutine(fn func() error) (returned bool, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = fn()
		returned = true
	}()
	<-done
	return returned, err
}

// Raft panics, out of any recover's reach, on some errors of its log
// store. What raft is given returns what raft handles (a missing entry),
// and ends raft's goroutine instead of returning an entry that cannot be
// read, a fault, or a term that cannot be saved; the store hears of it.
func TestRaftLogStoreNeverHandsRaftAFatalError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		lock       lockStub
		setup      func(t *testing.T, path string)
		call       func(r raftLogStore) error
		returns    bool   // the call returns to raft
		unreadable string // what the store hears of an unreadable entry
		fault      bool   // the store hears of a fault
	}{
		{name: "entry", call: func(r raftLogStore) error { var l raft.Log; return r.GetLog(5, &l) }, returns: true},
		{name: "missing entry", call: func(r raftLogStore) error {
			var l raft.Log
			if err := r.GetLog(500, &l); !errors.Is(err, raft.ErrLogNotFound) {
				return errors.New("want ErrLogNotFound")
			}
			return nil
		}, returns: true},
		{name: "entry that does not decode", call: func(r raftLogStore) error { var l raft.Log; return r.GetLog(7, &l) }, unreadable: "raft log entry 7"},
		{name: "file cut under it", setup: func(t *testing.T, path string) {
			if err := os.Truncate(path, 32<<10); err != nil {
				t.Fatal(err)
			}
		}, call: func(r raftLogStore) error { var l raft.Log; return r.GetLog(190, &l) }, fault: true},
		{name: "term not saved", lock: lockStub{err: errors.New("lease lost")}, call: func(r raftLogStore) error {
			return r.SetUint64([]byte("CurrentTerm"), 9)
		}},
		{name: "vote not saved", lock: lockStub{err: errors.New("lease lost")}, call: func(r raftLogStore) error {
			if err := r.Set([]byte("LastVoteCand"), []byte("x")); err == nil {
				return errors.New("want the refusal")
			}
			return nil
		}, returns: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, path, unreadable, faults := logFixture(t, tc.lock)
			if tc.setup != nil {
				tc.setup(t, path)
			}
			returned, err := onItsOwnGoroutine(func() error { return tc.call(raftLogStore{g}) })
			if returned != tc.returns || (returned && err != nil) {
				t.Fatalf("returned to raft: %v (%v), want %v", returned, err, tc.returns)
			}
			if tc.unreadable != "" && (len(*unreadable) != 1 || !strings.Contains((*unreadable)[0].Error(), tc.unreadable) || !strings.Contains((*unreadable)[0].Error(), path)) {
				t.Fatalf("the store heard %v; want one error about %q in %s", *unreadable, tc.unreadable, path)
			}
			if tc.unreadable == "" && len(*unreadable) != 0 {
				t.Fatalf("the store heard of an unreadable entry: %v", *unreadable)
			}
			if got := len(*faults) == 1 && errors.Is((*faults)[0], boltfile.ErrDamaged); got != tc.fault {
				t.Fatalf("faults the store heard of: %v; want a fault: %v", *faults, tc.fault)
			}
		})
	}
}
