package repository

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"

	bolt "go.etcd.io/bbolt"
)

// Digest returns a hex SHA-256 over a canonical dump of the replicated state:
// the group identity, for every source in name order its bookkeeping (with
// how far retention released it and the last session expired), every message
// in sequence order, its receivers' positions in receiver name order and
// their registrations (receivers_digest.go) and its pacing, then
// the records of the other groups in index order. The applied index and term
// are left out, as are bbolt's page layout and free space: two stores that
// applied the same log have equal digests even if they applied it in
// different batches or one restored it from a snapshot. Tests compare members
// with it.
func (r *Repo) Digest() (string, error) {
	h := sha256.New()
	err := r.view(func(tx *bolt.Tx) error {
		d := digester{h: h}
		d.str("umstore-repository-digest-v1")
		g := readGroup(tx.Bucket(bucketMeta))
		d.str(g.id)
		d.u64(uint64(int64(g.index)))
		d.u64(uint64(g.created))

		c := tx.Bucket(bucketSources).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v != nil {
				continue
			}
			name := string(k)
			st, err := loadState(tx, name)
			if err != nil {
				return err
			}
			d.str("source")
			d.str(name)
			d.u64(st.HighSeq)
			d.u64(st.LowSeq)
			d.u64(st.Count)
			d.u64(st.Bytes)
			d.u64(uint64(len(st.Gaps)))
			for _, g := range st.Gaps {
				d.u64(g.From)
				d.u64(g.To)
			}
			d.str(st.Session)
			d.u64(uint64(st.Created))
			d.u64(uint64(st.LastRegister))
			// Only when the source was ever trimmed, so that a repository
			// without retention digests as it did before it existed. The
			// marker's length (7) tells it from a message key (always 8),
			// from "receivers" (9) and from "end" (3).
			if st.TrimmedThrough != 0 {
				d.str("trimmed")
				d.u64(st.TrimmedThrough)
			}
			// Likewise only once a session expired, so that a repository
			// without expiries digests as it did before they existed. The
			// marker's length (15) tells it from every other field that may
			// follow LastRegister.
			if st.ExpiredSession != "" {
				d.str("expired-session")
				d.str(st.ExpiredSession)
				d.u64(uint64(st.ExpiredUnixNano))
			}
			// Likewise only once a publisher declared numbers it never
			// used (marker length 11).
			if len(st.Unpublished) > 0 {
				d.str("unpublished")
				d.u64(uint64(len(st.Unpublished)))
				for _, g := range st.Unpublished {
					d.u64(g.From)
					d.u64(g.To)
				}
			}

			// Message by message, each as its 8-byte key then its payload,
			// as when every message had a key of its own: how messages are
			// cut into runs is no part of the state.
			b := tx.Bucket(bucketSources).Bucket(k)
			msgs := b.Bucket(bucketMsgs)
			if msgs == nil {
				return fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, name)
			}
			var key [8]byte
			mc := newMsgCursor(msgs)
			mc.log = r.entries
			seq, p, ok, err := mc.first()
			for ; ok; seq, p, ok, err = mc.next() {
				binary.BigEndian.PutUint64(key[:], seq)
				d.bytes(key[:])
				d.bytes(p)
			}
			if err != nil {
				return fmt.Errorf("source %q: %w", name, err)
			}

			// Only when there are any, so that a repository without receiver
			// positions digests as it did before they existed. The marker's
			// length (9) tells it from a message key (always 8), and the
			// count delimits the records.
			var receivers []ReceiverPosition
			if err := readReceivers(name, b, func(p ReceiverPosition) { receivers = append(receivers, p) }); err != nil {
				return err
			}
			if len(receivers) > 0 {
				d.str("receivers")
				d.u64(uint64(len(receivers)))
				for _, p := range receivers {
					d.str(p.Receiver)
					d.u64(p.Seq)
					d.u64(uint64(p.UnixNano))
				}
			}
			if err := digestRegistrations(&d, name, b, receivers); err != nil {
				return err
			}
			d.str("end")
		}

		// Last, and only when there are any, so that a repository without
		// peer records digests as it did before they existed.
		err := readPeers(tx.Bucket(bucketMeta), func(p PeerGroupRecord) {
			d.str("peer-group")
			d.u64(uint64(int64(p.Index)))
			d.str(p.GroupID)
			d.u64(uint64(p.SinceUnixNano))
			d.str(p.Previous)
		})
		if err != nil {
			return err
		}
		digestLevel(&d, tx.Bucket(bucketMeta))          // level.go
		return digestMembers(&d, tx.Bucket(bucketMeta)) // members.go
	})
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", r.path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digester writes length-prefixed fields so that no two different dumps
// produce the same byte stream.
type digester struct {
	h   hash.Hash
	buf [8]byte
}

func (d *digester) u64(v uint64) {
	binary.BigEndian.PutUint64(d.buf[:], v)
	d.h.Write(d.buf[:])
}

func (d *digester) bytes(b []byte) {
	d.u64(uint64(len(b)))
	d.h.Write(b)
}

func (d *digester) str(s string) {
	d.u64(uint64(len(s)))
	d.h.Write([]byte(s))
}
