package repository

import (
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestOpenRefusesFormatVersion1(t *testing.T) {
	_, err := Open(repoWithFormat(t, 1), Options{})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "format version 1") {
		t.Fatalf("Open of a version 1 file: %v, want ErrFormat naming version 1", err)
	}
}

// A damaged run is an error wrapping ErrFormat wherever it is met, never a
// panic or a wrong answer.
func TestDamagedRuns(t *testing.T) {
	damage := map[string]struct {
		spoil     func(msgs *bolt.Bucket) error
		trimMeets bool // a Trim through 5 reads the damaged run
	}{
		"truncated run": {func(msgs *bolt.Bucket) error {
			return msgs.Put(u64(1), encodeRun(payloads("a", 1, 5))[:9])
		}, true},
		"count beyond the bytes": {func(msgs *bolt.Bucket) error {
			return msgs.Put(u64(1), []byte{200, 1, 'a'})
		}, true},
		"overlapping runs": {func(msgs *bolt.Bucket) error {
			return msgs.Put(u64(3), encodeRun(payloads("a", 3, 4)))
		}, true}, // drops more than the bookkeeping holds
		"run past the last sequence number": {func(msgs *bolt.Bucket) error {
			return msgs.Put(u64(^uint64(0)), encodeRun(payloads("a", 1, 2)))
		}, false},
		"short key": {func(msgs *bolt.Bucket) error {
			return msgs.Put([]byte{1}, encodeRun(payloads("a", 1, 1))) // sorts after every 8-byte key here
		}, true},
	}
	for name, d := range damage {
		t.Run(name, func(t *testing.T) {
			r := openTest(t)
			mustApply(t, r, logOf(1, pub("a", 1, 5)))
			if err := r.db.Update(func(tx *bolt.Tx) error {
				return d.spoil(tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs))
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Read("a", 0, ^uint64(0), 0, 0); !errors.Is(err, ErrFormat) {
				t.Errorf("Read: %v, want ErrFormat", err)
			}
			if _, err := r.Digest(); !errors.Is(err, ErrFormat) {
				t.Errorf("Digest: %v, want ErrFormat", err)
			}
			if _, _, err := r.RetentionPlan("a", 1, 0); !errors.Is(err, ErrFormat) { // walks every message
				t.Errorf("RetentionPlan: %v, want ErrFormat", err)
			}
			if _, err := r.Apply(logOf(2, Trim{Source: "a", Through: 5})); d.trimMeets && !errors.Is(err, ErrFormat) {
				t.Errorf("Apply of a Trim: %v, want ErrFormat", err)
			}
		})
	}
	// A duplicate's conflict check meets the damage too.
	r := openTest(t)
	mustApply(t, r, logOf(1, pub("a", 1, 5)))
	if err := r.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs).Put(u64(1), []byte{5, 1})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(logOf(2, pub("a", 3, 1))); !errors.Is(err, ErrFormat) {
		t.Errorf("Apply of a duplicate: %v, want ErrFormat", err)
	}
}
