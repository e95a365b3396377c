package repository

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// ReceiverPosition is how far a receiver has consumed a source, as recorded
// by the last Consumed entry that advanced it (see Consumed).
type ReceiverPosition struct {
	Receiver string
	Seq      uint64 // highest sequence number consumed, ≥ 1
	UnixNano int64  // UnixNano of the Consumed entry that recorded Seq
}

// receiverRecord is a ReceiverPosition as written to the file: a msgpack map
// with short keys, so fields can be added without a format change (absent
// keys decode as zero).
type receiverRecord struct {
	Seq      uint64 `msgpack:"s"`
	UnixNano int64  `msgpack:"t,omitempty"`
}

func encodeReceiver(p *receiverRecord) ([]byte, error) { return msgpack.Marshal(p) }

// decodeReceiver reads the record stored under key k of
// sources/<source>/receivers.
func decodeReceiver(source string, k, v []byte) (ReceiverPosition, error) {
	if len(k) == 0 || v == nil {
		return ReceiverPosition{}, fmt.Errorf("%w: unexpected entry %q in %s/%s/%s", ErrFormat, k, bucketSources, source, bucketReceivers)
	}
	var p receiverRecord
	if err := msgpack.Unmarshal(v, &p); err != nil {
		return ReceiverPosition{}, fmt.Errorf("%w: receiver %q of source %q: %v", ErrFormat, k, source, err)
	}
	if p.Seq == 0 {
		return ReceiverPosition{}, fmt.Errorf("%w: receiver %q of source %q recorded without a position", ErrFormat, k, source)
	}
	return ReceiverPosition{Receiver: string(k), Seq: p.Seq, UnixNano: p.UnixNano}, nil
}

// readReceivers calls fn for every receiver record of the source bucket b,
// in receiver name order.
func readReceivers(source string, b *bolt.Bucket, fn func(ReceiverPosition)) error {
	rb := b.Bucket(bucketReceivers)
	if rb == nil {
		return nil // no position recorded yet, or a file from before receivers
	}
	c := rb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		pos, err := decodeReceiver(source, k, v)
		if err != nil {
			return err
		}
		fn(pos)
	}
	return nil
}

// Receivers returns the position recorded for every receiver of source,
// sorted by receiver name: an empty, non-nil slice if none was recorded. An
// unknown source gives an error wrapping ErrUnknownSource. It reads the file
// in a short read transaction, so it waits for a Restore in progress.
func (r *Repo) Receivers(source string) ([]ReceiverPosition, error) {
	out := []ReceiverPosition{}
	err := r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		return readReceivers(source, b, func(p ReceiverPosition) {
			out = append(out, p)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read receivers of %q: %w", source, err)
	}
	return out, nil
}
