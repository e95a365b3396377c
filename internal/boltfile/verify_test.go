package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A file whose pages are damaged in a way only a walk of the whole tree
// finds (a key out of order on a leaf page) is refused by Open as damaged,
// and a sound one opens. Without Verify the first write transaction would
// rebuild the free list, and bbolt would panic on a goroutine of its own,
// ending the test binary (the fault suite's seed 1203 ended a store host
// that way).
func TestOpenVerifiesAFileWhoseFreeListIsRebuilt(t *testing.T) {
	opts := &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, Timeout: time.Second}
	write := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "db")
		db, err := bolt.Open(path, 0o600, opts)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("b"))
			if err != nil {
				return err
			}
			for i := range 100 {
				if err := b.Put([]byte(fmt.Sprintf("key%03d", i)), bytes.Repeat([]byte{'v'}, 20)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	open := func(path string) (*bolt.DB, error) {
		var db *bolt.DB
		err := Open(path, "open", opts, func(o *bolt.Options) (err error) {
			db, err = bolt.Open(path, 0o600, o)
			return err
		})
		return db, err
	}

	sound := write(t)
	db, err := open(sound)
	if err != nil {
		t.Fatalf("a sound file: %v", err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("key100"), nil) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	damagedFile := write(t)
	raw, err := os.ReadFile(damagedFile)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, []byte("key050"))
	if at < 0 {
		t.Fatal("key050 not found in the file")
	}
	copy(raw[at:], "key000") // now below the key before it
	if err := os.WriteFile(damagedFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = open(damagedFile)
	if !errors.Is(err, ErrDamaged) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("a file with a key out of order: %v, want ErrDamaged", err)
	}
}
