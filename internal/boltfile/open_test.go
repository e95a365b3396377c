package boltfile

import (
	"errors"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// When opening faults, bbolt never returns its handle: Open closes the file
// it opened, so that its lock does not keep the file from being opened
// (or moved aside and replaced) again in this process.
func TestOpenReleasesTheFileAfterAFault(t *testing.T) {
	path, _ := newDB(t)
	opts := &bolt.Options{Timeout: 200 * time.Millisecond}
	err := Open(path, "open x", opts, func(o *bolt.Options) error {
		if _, err := bolt.Open(path, 0o600, o); err != nil {
			return err
		}
		panic("bbolt panicked while reading the file")
	})
	var f *Fault
	if !errors.As(err, &f) || f.Memory() {
		t.Fatalf("Open: %v; want the panic as a *Fault", err)
	}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatalf("the file stays locked after a fault while opening it: %v", err)
	}
	db.Close()
}

// Open checks the file before anything maps it.
func TestOpenChecksFirst(t *testing.T) {
	path, _ := newDB(t)
	if err := os.Truncate(path, 65536); err != nil {
		t.Fatal(err)
	}
	called := false
	err := Open(path, "open x", nil, func(*bolt.Options) error { called = true; return nil })
	if !errors.Is(err, ErrDamaged) || called {
		t.Fatalf("Open of a cut file: %v, opened: %v; want ErrDamaged before opening", err, called)
	}
}
