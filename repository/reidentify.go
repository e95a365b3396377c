package repository

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Reidentify gives a repository restored from a backup its new group
// identity, and replaces, in what it remembers of the other groups, each
// identity that peers maps to a new one (the other groups restored from
// the same backup). It is not a command: `umstored restore` calls it on
// every store of a group before any of them runs, with the same arguments
// on each (derived from the backup's manifest), so the stores of the
// restored group stay identical, as apply would have kept them. The group
// index and creation time are kept.
func (r *Repo) Reidentify(groupID string, peers map[string]string) error {
	if groupID == "" {
		return fmt.Errorf("reidentify %s: an empty group identity", r.path)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return ErrClosed
	}
	err := r.guard("give the repository a new identity", func() error {
		return r.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if err := meta.Put(keyGroupID, []byte(groupID)); err != nil {
				return err
			}
			b := meta.Bucket(bucketPeerGroups)
			if b == nil {
				return nil
			}
			type put struct{ k, v []byte }
			var puts []put
			err := b.ForEach(func(k, v []byte) error {
				rec, err := decodePeer(k, v)
				if err != nil {
					return err
				}
				id, ok := peers[rec.GroupID]
				if !ok {
					return nil
				}
				nv, err := encodePeer(&peerRecord{GroupID: id, Since: rec.SinceUnixNano, Previous: rec.Previous})
				if err != nil {
					return err
				}
				puts = append(puts, put{append([]byte(nil), k...), nv})
				return nil
			})
			if err != nil {
				return err
			}
			for _, p := range puts {
				if err := b.Put(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("reidentify %s: %w", r.path, err)
	}
	return r.load()
}
