package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Verify walks every key of every bucket of the bbolt file at path, in a
// read-only open that is closed again, on the calling goroutine under
// Guard, and reports as damage a bucket whose keys are not in increasing
// order or a page bbolt cannot read. It is needed because a file opened
// with NoFreelistSync has its free list rebuilt, on the first write, by a
// walk of the whole tree, and bbolt turns what that walk finds (keys out
// of order, a page reached twice: both show here as keys that do not
// increase) into a panic on a goroutine of its own, where no recover
// reaches: one damaged store would end the process and every other store
// in it. bbolt's own Tx.Check cannot be used first: it rebuilds the free
// list the same way. A missing or empty file passes, and so does one bbolt
// does not open (the open after Verify reports why); call Check first
// (Open does).
func Verify(path string, timeout time.Duration) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	var bad error
	err = Guard(path, "verify", func() error {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
		if err != nil {
			// Locked by another process, not a bbolt file...: the open that
			// follows meets the same and says so in its own words.
			return nil
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			bad = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				return walkBucket(b, string(name))
			})
			return nil
		})
	})
	if err != nil {
		var f *Fault
		if errors.As(err, &f) {
			return damaged(path, "reading its pages failed: %v", f.Value)
		}
		return err
	}
	if bad != nil {
		return damaged(path, "%v", bad)
	}
	return nil
}

// walkBucket reads every key of b and of the buckets nested in it, and
// reports the first key that does not come after the one before it.
func walkBucket(b *bolt.Bucket, path string) error {
	c := b.Cursor()
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(k, prev) <= 0 {
			return fmt.Errorf("bucket %s: key %x comes after key %x: its pages are out of order", path, k, prev)
		}
		prev = append(prev[:0], k...)
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				if err := walkBucket(nb, path+"/"+string(k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
