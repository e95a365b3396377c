package repository

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
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

// FreeSessions frees every source from the publisher session that held it
// and marks every durable receiver inactive, as ExpireSession and
// ExpireReceiver would, at unixNano. `umstored restore` calls it on every
// store of a restored group, with the same time (the backup's): the
// sessions recorded in a backup belong to processes of the deployment it
// came from, and without it a publisher of the restored deployment would
// wait out the source's activity timeout before it could take its source.
func (r *Repo) FreeSessions(unixNano int64) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return ErrClosed
	}
	err := r.guard("free the sessions of a restored repository", func() error {
		return r.db.Update(func(tx *bolt.Tx) error {
			sources := tx.Bucket(bucketSources)
			if sources == nil {
				return nil
			}
			var names [][]byte
			if err := sources.ForEach(func(k, v []byte) error {
				if v == nil {
					names = append(names, append([]byte(nil), k...))
				}
				return nil
			}); err != nil {
				return err
			}
			for _, name := range names {
				if err := freeSource(sources.Bucket(name), string(name), unixNano); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("free sessions in %s: %w", r.path, err)
	}
	return nil
}

// freeSource frees one source's bucket b of its sessions.
func freeSource(b *bolt.Bucket, name string, unixNano int64) error {
	if v := b.Get(keyState); v != nil {
		st, err := decodeState(v)
		if err != nil {
			return fmt.Errorf("source %q: %w", name, err)
		}
		if st.Session != "" {
			st.ExpiredSession, st.ExpiredUnixNano, st.Session = st.Session, unixNano, ""
			nv, err := encodeState(&st)
			if err != nil {
				return err
			}
			if err := b.Put(keyState, nv); err != nil {
				return err
			}
		}
	}
	rb := b.Bucket(bucketReceivers)
	if rb == nil {
		return nil
	}
	type put struct {
		k   string
		rec receiverRecord
	}
	var puts []put
	err := rb.ForEach(func(k, v []byte) error {
		var rec receiverRecord
		if err := msgpack.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("%w: receiver %q of source %q: %v", ErrFormat, k, name, err)
		}
		if rec.Active {
			rec.Active, rec.Expired = false, unixNano
			puts = append(puts, put{string(k), rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range puts {
		if err := putRecord(rb, name, p.k, &p.rec); err != nil {
			return err
		}
	}
	return nil
}
