package repository

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// PeerGroupRecord is what the repository remembers of another group of the
// deployment (see PeerGroup).
type PeerGroupRecord struct {
	Index         int
	GroupID       string // the identity recorded last
	SinceUnixNano int64  // UnixNano of the PeerGroup entry that recorded GroupID
	// Previous is the identity GroupID replaced, if the group's identity ever
	// changed (an operator re-created the group): only the last replaced one
	// is kept.
	Previous string
}

// peerRecord is a PeerGroupRecord as written to the file: a msgpack map with
// short keys, so fields can be added without a format change (absent keys
// decode as zero).
type peerRecord struct {
	GroupID  string `msgpack:"i"`
	Since    int64  `msgpack:"t,omitempty"`
	Previous string `msgpack:"p,omitempty"`
}

func peerKey(index int) []byte { return u64(uint64(int64(index))) }

func encodePeer(p *peerRecord) ([]byte, error) { return msgpack.Marshal(p) }

// decodePeer reads the record stored under key k of meta/peer-groups.
func decodePeer(k, v []byte) (PeerGroupRecord, error) {
	if len(k) != 8 || v == nil {
		return PeerGroupRecord{}, fmt.Errorf("%w: unexpected entry %x in %s/%s", ErrFormat, k, bucketMeta, bucketPeerGroups)
	}
	index := int64(binary.BigEndian.Uint64(k))
	var p peerRecord
	if err := msgpack.Unmarshal(v, &p); err != nil {
		return PeerGroupRecord{}, fmt.Errorf("%w: peer group %d: %v", ErrFormat, index, err)
	}
	if index < 1 || p.GroupID == "" {
		return PeerGroupRecord{}, fmt.Errorf("%w: peer group %d recorded without an identity", ErrFormat, index)
	}
	return PeerGroupRecord{Index: int(index), GroupID: p.GroupID, SinceUnixNano: p.Since, Previous: p.Previous}, nil
}

// readPeers calls fn for every peer record of meta, in index order.
func readPeers(meta *bolt.Bucket, fn func(PeerGroupRecord)) error {
	b := meta.Bucket(bucketPeerGroups)
	if b == nil {
		return nil // none recorded yet, or a file from before peer groups
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rec, err := decodePeer(k, v)
		if err != nil {
			return err
		}
		fn(rec)
	}
	return nil
}

// PeerGroups returns the identity recorded for every other group of the
// deployment, by group index. It reads the file in a short read transaction
// (the records are few), so it waits for a Restore in progress.
func (r *Repo) PeerGroups() (map[int]string, error) {
	out := map[int]string{}
	err := r.view(func(tx *bolt.Tx) error {
		return readPeers(tx.Bucket(bucketMeta), func(rec PeerGroupRecord) {
			out[rec.Index] = rec.GroupID
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read peer groups of %s: %w", r.path, err)
	}
	return out, nil
}

// PeerGroupRecords returns everything recorded of the other groups, with the
// identity each one had before, sorted by group index.
func (r *Repo) PeerGroupRecords() ([]PeerGroupRecord, error) {
	var out []PeerGroupRecord
	err := r.view(func(tx *bolt.Tx) error {
		return readPeers(tx.Bucket(bucketMeta), func(rec PeerGroupRecord) {
			out = append(out, rec)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read peer groups of %s: %w", r.path, err)
	}
	return out, nil
}
