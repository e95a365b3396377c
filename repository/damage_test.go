package repository

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"umstore/internal/boltfile"
)

// filledRepo writes a repository of a few hundred KiB (source "a", messages
// 1..1000 of 300 bytes) and returns its path, closed.
func filledRepo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "repo.db")
	r, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var cmds []any
	for first := uint64(1); first <= 1000; first += 10 {
		p := Publish{Source: "a", FirstSeq: first}
		for i := 0; i < 10; i++ {
			p.Payloads = append(p.Payloads, bytes.Repeat([]byte{byte(i)}, 300))
		}
		cmds = append(cmds, p)
	}
	mustApply(t, r, logOf(1, cmds...))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A damaged file is refused before bbolt maps it, with an error naming it
// that says it is damaged; bbolt would have faulted (SIGBUS) or panicked.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	cases := []struct {
		name   string
		damage func(path string) error
		says   string
	}{
		{"cut to 64 KiB", func(p string) error { return os.Truncate(p, 65536) }, "cut short"},
		{"cut to one page", func(p string) error { return os.Truncate(p, int64(os.Getpagesize())) }, "less than its two meta pages"},
		{"meta pages garbled", func(p string) error {
			return os.WriteFile(p, bytes.Repeat([]byte{0xA5}, 3*os.Getpagesize()), 0o600)
		}, "no valid meta page"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filledRepo(t)
			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{})
			if !errors.Is(err, boltfile.ErrDamaged) || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Open: %v; want ErrDamaged and ErrFormat naming %s and saying %q", err, path, tc.says)
			}
		})
	}
}

// A file cut under an open repository faults on the next read of a page
// past the end: the read returns an error naming the file instead of
// ending the process, the owner hears of it once, and the repository is
// used no more, not even to apply.
func TestFaultWhileOpenMakesTheRepositoryUnusable(t *testing.T) {
	path := filledRepo(t)
	var faults atomic.Int32
	var reported error
	r, err := Open(path, Options{NoSync: true, OnFault: func(err error) { faults.Add(1); reported = err }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(path, 65536); err != nil {
		t.Fatal(err)
	}
	_, err = r.Read("a", 1, 1000, 0, 0)
	if !errors.Is(err, boltfile.ErrDamaged) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Read of a file cut under the repository: %v; want ErrDamaged naming %s", err, path)
	}
	if faults.Load() != 1 || !errors.Is(reported, boltfile.ErrDamaged) {
		t.Fatalf("OnFault called %d times with %v; want once, with the fault", faults.Load(), reported)
	}
	if err := r.Fault(); err == nil {
		t.Fatal("Fault() is nil after a fault")
	}
	later := []struct {
		name string
		call func() error
	}{
		{"Sources", func() error { _, err := r.Sources(); return err }},
		{"Digest", func() error { _, err := r.Digest(); return err }},
		{"Apply", func() error { _, err := r.Apply(logOf(200, pub("a", 1001, 1))); return err }},
		{"Snapshot", func() error { _, err := r.Snapshot(); return err }},
		{"Restore", func() error { return r.Restore(bytes.NewReader(nil)) }},
	}
	for _, c := range later {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), r.Fault().Error()) {
			t.Errorf("%s after the fault: %v; want the fault again", c.name, err)
		}
	}
	if faults.Load() != 1 {
		t.Errorf("OnFault called %d times; want once", faults.Load())
	}
	if got := r.AppliedIndex(); got != 100 {
		t.Errorf("applied index %d after the fault, want it unchanged at 100", got)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close after a fault: %v", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, boltfile.ErrDamaged) {
		t.Fatalf("reopening the cut file: %v; want ErrDamaged", err)
	}
}
