package boltfile

import (
	"errors"

	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestGuard(t *testing.T) {
	errOwn := errors.New("fn's own error")
	cases := []struct {
		name    string
		fn      func() error
		fault   bool // a *Fault comes back
		damaged bool // and it wraps ErrDamaged
	}{
		{"no error", func() error { return nil }, false, false},
		{"own error", func() error { return errOwn }, false, false},
		{"panic", func() error { panic("invalid page type") }, true, false},
		{"nil dereference", func() error { var p *int; return errors.New(string(rune(*p))) }, true, false},
		{"memory fault", readPastTheEnd(t), true, true},
		{"panic inside bbolt", readZeroedPages(t), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Guard("/data/x.db", "read x", tc.fn)
			var f *Fault
			if got := errors.As(err, &f); got != tc.fault {
				t.Fatalf("Guard: %v; want a *Fault: %v", err, tc.fault)
			}
			if !tc.fault {
				if tc.name == "own error" && err != errOwn {
					t.Fatalf("Guard changed fn's error: %v", err)
				}
				return
			}
			if errors.Is(err, ErrDamaged) != tc.damaged || f.Damaged() != tc.damaged {
				t.Fatalf("Guard: %v; want ErrDamaged: %v", err, tc.damaged)
			}
			if !strings.Contains(err.Error(), "/data/x.db") || !strings.Contains(err.Error(), "read x") || len(f.Stack) == 0 {
				t.Fatalf("the fault %q does not name the file and the operation, or has no stack", err)
			}
		})
	}
	// Only inside Guard: the goroutine's setting is restored.
	if debugPanicOnFault() {
		t.Fatal("Guard left SetPanicOnFault on")
	}
}

// readZeroedPages returns a func reading a bbolt file whose pages but the
// metas are zeros (a file cut and grown back): bbolt panics on the page.
func readZeroedPages(t *testing.T) func() error {
	path, ps := newDB(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, path, int64(2*ps), make([]byte, fi.Size()-int64(2*ps)))
	if err := Check(path); err != nil {
		t.Fatalf("the meta check cannot see zeroed pages, yet: %v", err)
	}
	return func() error {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			if tx.Bucket([]byte("b")) != nil {
				return errors.New("found a bucket in zeroed pages")
			}
			return nil
		})
	}
}

// readPastTheEnd maps a file, cuts it, and returns a func reading the page
// that is no longer there: the SIGBUS a truncated bbolt file gives.
func readPastTheEnd(t *testing.T) func() error {
	path := filepath.Join(t.TempDir(), "cut")
	size := 4 * os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := os.Truncate(path, int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	return func() error {
		if m[size-1] != 0 {
			return errors.New("read a byte that is not there")
		}
		return nil
	}
}

// debugPanicOnFault reports the calling goroutine's SetPanicOnFault setting.
func debugPanicOnFault() bool {
	old := debug.SetPanicOnFault(false)
	debug.SetPanicOnFault(old)
	return old
}

// After its first fault a Guarded file is not used again: later calls get
// the same error without running, and OnFault hears of it once.
func TestGuardedStopsAtTheFirstFault(t *testing.T) {
	var faults []error
	g := &Guarded{Path: "/data/raft.db", What: "raft log", OnFault: func(err error) { faults = append(faults, err) }}
	if err := g.Run("get log", func() error { return nil }); err != nil || g.Err() != nil {
		t.Fatalf("Run before any fault: %v, Err %v", err, g.Err())
	}
	first := g.Run("get log", readPastTheEnd(t))
	if !errors.Is(first, ErrDamaged) || !strings.Contains(first.Error(), "raft log /data/raft.db is unusable") {
		t.Fatalf("Run that faulted: %v", first)
	}
	ran := false
	later := g.Run("store logs", func() error { ran = true; return nil })
	if ran || later == nil || later.Error() != first.Error() || g.Err() == nil {
		t.Fatalf("Run after the fault: ran %v, %v; want the first fault without running", ran, later)
	}
	if len(faults) != 1 || faults[0].Error() != first.Error() {
		t.Fatalf("OnFault heard %v; want the fault once", faults)
	}
}
