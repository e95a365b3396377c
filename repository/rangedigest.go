package repository

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// RangeSum is a digest of the messages a repository holds of one source in
// [From, Through]: Count messages whose sequence numbers and payloads, in
// order, hash to Sum. Two groups that hold the same messages there have
// equal sums, whatever runs they store them in.
type RangeSum struct {
	Through uint64
	Count   uint64
	Sum     [sha256.Size]byte
}

// RangeDigest hashes the messages of source held in [from, to], stopping
// after maxCount messages (≤ 0: no limit); Through is then the last one
// hashed, else to. Intergroup repair compares the sums of two groups over
// the ranges both hold, so that two groups holding different payloads for
// one sequence number are found without copying the messages. An unknown
// source gives an error wrapping ErrUnknownSource.
func (r *Repo) RangeDigest(source string, from, to uint64, maxCount int) (RangeSum, error) {
	out := RangeSum{Through: to}
	h := sha256.New()
	err := r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		msgs := b.Bucket(bucketMsgs)
		if msgs == nil {
			return fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, source)
		}
		var hdr [16]byte
		mc := newMsgCursor(msgs)
		mc.log = r.entries
		seq, p, ok, err := mc.seek(from)
		for ; ok && seq <= to; seq, p, ok, err = mc.next() {
			if maxCount > 0 && out.Count == uint64(maxCount) {
				break
			}
			binary.BigEndian.PutUint64(hdr[:8], seq)
			binary.BigEndian.PutUint64(hdr[8:], uint64(len(p)))
			h.Write(hdr[:])
			h.Write(p)
			out.Count++
			out.Through = seq
		}
		if err != nil {
			return fmt.Errorf("source %q: %w", source, err)
		}
		if !ok || seq > to {
			out.Through = to // nothing was cut: the sum covers the whole range
		}
		return nil
	})
	if err != nil {
		return RangeSum{}, fmt.Errorf("digest %q [%d,%d]: %w", source, from, to, err)
	}
	copy(out.Sum[:], h.Sum(nil))
	return out, nil
}
