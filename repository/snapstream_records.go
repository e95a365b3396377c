package repository

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The stream's records as the builder writes them: each is checked as
// apply would have written it before it goes into the new file.

func (b *builder) groupRecord(body []byte) error {
	f := fields{b: body}
	id, idx, created := f.next(), f.u64(), f.u64()
	if err := f.done(); err != nil {
		return err
	}
	b.group = string(id)
	if len(id) == 0 {
		return nil
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyGroupID, id); err != nil {
			return err
		}
		if err := meta.Put(keyGroupIndex, u64(idx)); err != nil {
			return err
		}
		return meta.Put(keyGroupCreated, u64(created))
	})
}

func (b *builder) peerRecord(body []byte) error {
	f := fields{b: body}
	k, v := f.next(), f.next()
	if err := f.done(); err != nil {
		return err
	}
	if _, err := decodePeer(k, v); err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		pb, err := tx.Bucket(bucketMeta).CreateBucketIfNotExists(bucketPeerGroups)
		if err != nil {
			return err
		}
		return pb.Put(k, v)
	})
}

// levelRecord writes the group's active level, refusing one apply would
// not have written (1 or less, or above what this binary reads).
func (b *builder) levelRecord(body []byte) error {
	f := fields{b: body}
	l := f.u64()
	if err := f.done(); err != nil {
		return err
	}
	if l <= 1 || l > FormatLevel {
		return fmt.Errorf("%w: snapshot stream: active level %d, this binary reads levels 1 to %d", ErrFormat, l, FormatLevel)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyActiveLevel, u64(l))
	})
}

// memberRecord writes one member's addresses, refusing a record that apply
// would not have written (no name, an address missing).
func (b *builder) memberRecord(body []byte) error {
	f := fields{b: body}
	k, v := f.next(), f.next()
	if err := f.done(); err != nil {
		return err
	}
	m, err := decodeMember(k, v)
	if err == nil && (m.RaftAddr == "" || m.ClientAddr == "") {
		err = fmt.Errorf("member %q without an address", m.Name)
	}
	if err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		mb, err := tx.Bucket(bucketMeta).CreateBucketIfNotExists(bucketMembers)
		if err != nil {
			return err
		}
		return mb.Put(k, v)
	})
}

// sourceRecord creates a source from its record, then reads its messages
// from the stream into inline runs, a transaction per restoreBatchBytes.
func (b *builder) sourceRecord(body []byte) error {
	f := fields{b: body}
	name, stateRaw := f.next(), f.next()
	nrec := f.count()
	var recs [][2][]byte
	for i := uint64(0); i < nrec && f.err == nil; i++ {
		recs = append(recs, [2][]byte{f.next(), f.next()})
	}
	pacing := f.next()
	if err := f.done(); err != nil {
		return err
	}
	if err := validSourceName(string(name)); err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	st, err := decodeState(stateRaw)
	if err != nil {
		return fmt.Errorf("%w: snapshot stream: source %q: %v", ErrFormat, name, err)
	}
	err = b.db.Update(func(tx *bolt.Tx) error {
		sb, err := tx.Bucket(bucketSources).CreateBucket(name)
		if err != nil {
			return fmt.Errorf("%w: snapshot stream: source %q: %v", ErrFormat, name, err)
		}
		if _, err := sb.CreateBucket(bucketMsgs); err != nil {
			return err
		}
		if err := sb.Put(keyState, stateRaw); err != nil {
			return err
		}
		if len(recs) > 0 {
			rb, err := sb.CreateBucket(bucketReceivers)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if _, err := decodeReceiver(string(name), r[0], r[1]); err != nil {
					return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
				}
				if err := rb.Put(r[0], r[1]); err != nil {
					return err
				}
			}
		}
		if len(pacing) > 0 {
			if err := sb.Put(keyPacing, pacing); err != nil {
				return err
			}
			if _, err := readPacing(string(name), sb); err != nil {
				return fmt.Errorf("snapshot stream: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return b.messages(string(name), &st)
}
