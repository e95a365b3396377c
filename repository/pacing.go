package repository

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// keyPacing holds a paced source's pacing: sources/<name>/pacing, a msgpack
// map {m: mode}. It exists only while the source is paced (a RegisterPaced
// with PacingNone deletes it), so a source that never was has none, as
// files from before pacing existed.
var keyPacing = []byte("pacing")

type pacingRecord struct {
	Mode uint8 `msgpack:"m"`
}

// writePacing records mode in the source bucket b.
func writePacing(b *bolt.Bucket, mode Pacing) error {
	if mode == PacingNone {
		if b.Get(keyPacing) == nil {
			return nil
		}
		return b.Delete(keyPacing)
	}
	v, err := msgpack.Marshal(&pacingRecord{Mode: uint8(mode)})
	if err != nil {
		return fmt.Errorf("encode pacing: %w", err)
	}
	return b.Put(keyPacing, v)
}

// readPacing reads the pacing of the source bucket b.
func readPacing(source string, b *bolt.Bucket) (Pacing, error) {
	v := b.Get(keyPacing)
	if v == nil {
		return PacingNone, nil
	}
	var p pacingRecord
	if err := msgpack.Unmarshal(v, &p); err != nil {
		return 0, fmt.Errorf("%w: pacing of source %q: %v", ErrFormat, source, err)
	}
	if Pacing(p.Mode) > PacingNonBlocking || p.Mode == 0 {
		return 0, fmt.Errorf("%w: source %q recorded with pacing mode %d", ErrFormat, source, p.Mode)
	}
	return Pacing(p.Mode), nil
}

// PacingState is how a source is paced now: its mode and what its active
// paced receivers hold back.
type PacingState struct {
	Mode Pacing
	// Holders counts the receivers that hold the source back: registered
	// as paced and not expired since (ReceiverPosition.Holds).
	Holders int
	// ConsumedThrough is the lowest position among the holders: every one
	// of them consumed every message up to it. 0 without holders, or when
	// one of them consumed nothing yet.
	ConsumedThrough uint64
}

// Pacing returns how source is paced, read in a short read transaction.
// An unknown source gives an error wrapping ErrUnknownSource.
//
// The group's leader reads it to decide retention: for a paced source the
// messages every holder consumed may be released, and (PacingBlocking) the
// messages above ConsumedThrough are never released while a holder is
// active. The decision is the leader's, as for every Trim; the state it
// reads is the replicated one, so a new leader decides the same.
func (r *Repo) Pacing(source string) (PacingState, error) {
	var st PacingState
	err := r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		mode, err := readPacing(source, b)
		if err != nil {
			return err
		}
		st.Mode = mode
		first := true
		return readReceivers(source, b, func(p ReceiverPosition) {
			if !p.Holds() {
				return
			}
			st.Holders++
			if first || p.Seq < st.ConsumedThrough {
				st.ConsumedThrough = p.Seq
			}
			first = false
		})
	})
	if err != nil {
		return PacingState{}, fmt.Errorf("read pacing of %q: %w", source, err)
	}
	return st, nil
}
