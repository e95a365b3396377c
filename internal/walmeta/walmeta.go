// Package walmeta is raft-wal's metadata store with a checksum on every
// value it keeps.
//
// raft-wal keeps two things outside its segment files, in a small bbolt
// file (wal-meta.db): the list of segments (which file holds which indexes,
// with which codec) and raft's stable state (the current term and the vote).
// bbolt checks its meta pages but not the values in its leaves, so a bit
// flipped at rest in that file is read back as if it had been written: a
// codec number that no longer exists stops the store's start with an error
// nobody can act on, and a digit of an index or a term changed by one bit
// is believed. Such a file is damage, to be moved aside like any other
// damaged file of a store (its group holds everything it held).
//
// Store writes the same buckets and keys as raft-wal's own metadb package,
// so an older umstored (or raft-wal's tools) still reads the file, and adds
// a third bucket holding a CRC32C of each value, written in the same bbolt
// transaction as the value. Load checks every value of the file against
// its checksum, and that nothing is there that should not be (a bucket or
// key whose name was damaged); GetStable checks the value it returns. A
// file written by raft-wal's metadb, without the checksum bucket, is
// checksummed in place when it is first loaded: what it held then is
// trusted, as it was before.
package walmeta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// ErrDamaged marks a meta file whose values do not match their checksums,
// or that holds buckets or keys it should not. Its errors also wrap
// raft-wal's types.ErrCorrupt.
var ErrDamaged = errors.New("raft-wal's meta file is damaged")

// FileName is the meta file's name in the WAL's directory (raft-wal's).
const FileName = metadb.FileName

// sumsBucket holds the CRC32C of every value of the other two buckets,
// under the key "<bucket>/<key>".
const sumsBucket = "umstore-crc32c"

var (
	metaBucket   = []byte(metadb.MetaBucket)
	stableBucket = []byte(metadb.StableBucket)
	stateKey     = []byte(metadb.MetaKey)
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
)

// Store implements raft-wal's types.MetaStore. Use one per WAL directory.
type Store struct {
	dir  string
	path string
	db   *bbolt.DB
	// Migrated is set by Load when it checksummed a file written without
	// checksums (by raft-wal's metadb).
	Migrated bool
}

var _ types.MetaStore = (*Store)(nil)

// Load opens (creating if need be) the meta file in dir, checks every
// value in it and returns the segment list.
func (s *Store) Load(dir string) (types.PersistentState, error) {
	var state types.PersistentState
	if err := s.open(dir); err != nil {
		return state, err
	}
	var raw []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		if err := s.verify(tx); err != nil {
			return err
		}
		raw = bytes.Clone(tx.Bucket(metaBucket).Get(stateKey)) // verify found the bucket
		return nil
	})
	if errors.Is(err, errNoSums) {
		err = s.db.Update(func(tx *bbolt.Tx) error { return addSums(tx) })
		if err == nil {
			s.Migrated = true
			err = s.db.View(func(tx *bbolt.Tx) error {
				if err := s.verify(tx); err != nil {
					return err
				}
				raw = bytes.Clone(tx.Bucket(metaBucket).Get(stateKey))
				return nil
			})
		}
	}
	if err != nil || raw == nil {
		return state, err
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		return state, s.damaged("the segment list does not parse: %v", err)
	}
	return state, nil
}

// CommitState replaces the segment list, durably (bbolt syncs each commit).
func (s *Store) CommitState(state types.PersistentState) error {
	if s.db == nil {
		return metadb.ErrUnintialized
	}
	encoded, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encode raft-wal's segment list: %w", err)
	}
	return s.db.Update(func(tx *bbolt.Tx) error { return s.put(tx, metaBucket, stateKey, encoded) })
}

// GetStable returns a value of raft's stable state, nil if it was never
// set, after checking it against its checksum.
func (s *Store) GetStable(key []byte) ([]byte, error) {
	if s.db == nil {
		return nil, metadb.ErrUnintialized
	}
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		stable, sums, err := s.buckets(tx, stableBucket)
		if err != nil {
			return err
		}
		v := stable.Get(key)
		if v == nil {
			if sums.Get(sumKey(stableBucket, key)) != nil {
				return s.damaged("stable key %q has a checksum but no value", key)
			}
			return nil
		}
		if err := s.check(tx, stableBucket, key, v); err != nil {
			return err
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// SetStable sets (or, for a nil value, deletes) a value of raft's stable
// state and its checksum in one transaction.
func (s *Store) SetStable(key, value []byte) error {
	if s.db == nil {
		return metadb.ErrUnintialized
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if value == nil {
			stable, sums, err := s.buckets(tx, stableBucket)
			if err != nil {
				return err
			}
			if err := stable.Delete(key); err != nil {
				return err
			}
			return sums.Delete(sumKey(stableBucket, key))
		}
		return s.put(tx, stableBucket, key, value)
	})
}

// Close closes the file.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

func (s *Store) open(dir string) error {
	if s.db != nil {
		if s.dir != dir {
			return fmt.Errorf("raft-wal's meta store is open in %s, not %s", s.dir, dir)
		}
		return nil
	}
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := create(dir, path); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
	} else if err != nil {
		return err
	}
	db, err := bbolt.Open(path, 0o644, nil)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	s.dir, s.path, s.db = dir, path, db
	return nil
}

// create writes an empty meta file under a temporary name and renames it
// into place, so that a crash never leaves a half-made file.
func create(dir, path string) error {
	tmp := path + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	db, err := bbolt.Open(tmp, 0o644, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{metaBucket, stableBucket, []byte(sumsBucket)} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err = errors.Join(err, db.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// errNoSums: the file has raft-wal's two buckets and nothing else, as
// raft-wal's metadb writes it.
var errNoSums = errors.New("no checksums")

// verify checks the whole file: the three buckets and no other, every value
// with a matching checksum, every checksum with its value.
func (s *Store) verify(tx *bbolt.Tx) error {
	var names []string
	if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		names = append(names, string(name))
		return nil
	}); err != nil {
		return err
	}
	known := map[string]bool{string(metaBucket): false, string(stableBucket): false, sumsBucket: false}
	for _, n := range names {
		if _, ok := known[n]; !ok {
			return s.damaged("it holds a bucket %q that it should not", n)
		}
		known[n] = true
	}
	if !known[string(metaBucket)] || !known[string(stableBucket)] {
		return s.damaged("a bucket of raft-wal's is missing")
	}
	if !known[sumsBucket] {
		return errNoSums
	}
	sums := tx.Bucket([]byte(sumsBucket))
	for _, b := range [][]byte{metaBucket, stableBucket} {
		err := tx.Bucket(b).ForEach(func(k, v []byte) error {
			if v == nil {
				return s.damaged("bucket %q holds a nested bucket %q", b, k)
			}
			return s.check(tx, b, k, v)
		})
		if err != nil {
			return err
		}
	}
	return sums.ForEach(func(k, v []byte) error {
		b, key, ok := bytes.Cut(k, []byte("/"))
		if !ok || v == nil || (!bytes.Equal(b, metaBucket) && !bytes.Equal(b, stableBucket)) {
			return s.damaged("checksum key %q names no value", k)
		}
		if tx.Bucket(b).Get(key) == nil {
			return s.damaged("key %q of bucket %q has a checksum but no value", key, b)
		}
		return nil
	})
}

// buckets returns bucket and the checksums' bucket; a missing one (its
// name damaged since Load) is damage, not a nil bucket to panic on.
func (s *Store) buckets(tx *bbolt.Tx, bucket []byte) (b, sums *bbolt.Bucket, err error) {
	b, sums = tx.Bucket(bucket), tx.Bucket([]byte(sumsBucket))
	if b == nil || sums == nil {
		return nil, nil, s.damaged("bucket %q or %q is missing", bucket, sumsBucket)
	}
	return b, sums, nil
}

// check compares a value with its checksum.
func (s *Store) check(tx *bbolt.Tx, bucket, key, value []byte) error {
	_, sums, err := s.buckets(tx, bucket)
	if err != nil {
		return err
	}
	sum := sums.Get(sumKey(bucket, key))
	if len(sum) != 4 {
		return s.damaged("key %q of bucket %q has no checksum", key, bucket)
	}
	if want, got := binary.BigEndian.Uint32(sum), crc32.Checksum(value, castagnoli); want != got {
		return s.damaged("key %q of bucket %q: checksum %08x, its value's is %08x", key, bucket, want, got)
	}
	return nil
}

func (s *Store) damaged(format string, args ...any) error {
	return fmt.Errorf("%w (%w): %s: %s", ErrDamaged, types.ErrCorrupt, s.path, fmt.Sprintf(format, args...))
}

// put writes a value and its checksum.
func (s *Store) put(tx *bbolt.Tx, bucket, key, value []byte) error {
	b, sums, err := s.buckets(tx, bucket)
	if err != nil {
		return err
	}
	if err := b.Put(key, value); err != nil {
		return err
	}
	return sums.Put(sumKey(bucket, key), crcOf(value))
}

// addSums checksums every value of a file written by raft-wal's metadb.
func addSums(tx *bbolt.Tx) error {
	sums, err := tx.CreateBucket([]byte(sumsBucket))
	if err != nil {
		return err
	}
	for _, b := range [][]byte{metaBucket, stableBucket} {
		err := tx.Bucket(b).ForEach(func(k, v []byte) error {
			if v == nil {
				return nil // verify reports it
			}
			return sums.Put(sumKey(b, k), crcOf(v))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func sumKey(bucket, key []byte) []byte {
	return append(append(append([]byte{}, bucket...), '/'), key...)
}

func crcOf(v []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(v, castagnoli))
}
