package repository

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// ReceiverPosition is what the group records about one named receiver of a
// source: how far it consumed (Consumed entries), and, once it registered
// (RegisterReceiver), its session, whether it paces the source and whether
// it is still active (ExpireReceiver clears that).
//
// A receiver that only ever sent Consumed entries (receivers from before
// registration existed) has Seq and UnixNano and nothing else.
type ReceiverPosition struct {
	Receiver string
	Seq      uint64 // highest sequence number consumed; 0 if it registered but consumed nothing yet
	UnixNano int64  // UnixNano of the Consumed entry that recorded Seq

	// Session is the session of the receiver's last registration; "" if it
	// never registered.
	Session string
	// Paced is true when the receiver registered as a receiver-paced
	// persistence (RPP) receiver: while Active, the messages of a paced
	// source it has not consumed are kept for it.
	Paced bool
	// Active is true from a registration until the leader expires the
	// receiver after its activity timeout (ExpireReceiver). Only an active
	// paced receiver holds a paced source's messages back.
	Active bool
	// RegisteredUnixNano is the time of the last registration and
	// ExpiredUnixNano that of the last expiry; 0 if none.
	RegisteredUnixNano int64
	ExpiredUnixNano    int64
}

// Holds reports whether the receiver holds its source's retention back:
// it registered as paced and has not been expired since.
func (p ReceiverPosition) Holds() bool { return p.Paced && p.Active }

// receiverRecord is a ReceiverPosition as written to the file: a msgpack map
// with short keys, so fields can be added without a format change (absent
// keys decode as zero). The keys "ss", "p", "a", "r" and "x" came with
// RegisterReceiver: a record written by Consumed alone has none of them.
type receiverRecord struct {
	Seq        uint64 `msgpack:"s"`
	UnixNano   int64  `msgpack:"t,omitempty"`
	Session    string `msgpack:"ss,omitempty"`
	Paced      bool   `msgpack:"p,omitempty"`
	Active     bool   `msgpack:"a,omitempty"`
	Registered int64  `msgpack:"r,omitempty"`
	Expired    int64  `msgpack:"x,omitempty"`
}

func encodeReceiver(p *receiverRecord) ([]byte, error) { return msgpack.Marshal(p) }

func (p *receiverRecord) position(name string) ReceiverPosition {
	return ReceiverPosition{Receiver: name, Seq: p.Seq, UnixNano: p.UnixNano, Session: p.Session, Paced: p.Paced,
		Active: p.Active, RegisteredUnixNano: p.Registered, ExpiredUnixNano: p.Expired}
}

// decodeReceiverRecord reads the record stored under key k of
// sources/<source>/receivers.
func decodeReceiverRecord(source string, k, v []byte) (receiverRecord, error) {
	if len(k) == 0 || v == nil {
		return receiverRecord{}, fmt.Errorf("%w: unexpected entry %q in %s/%s/%s", ErrFormat, k, bucketSources, source, bucketReceivers)
	}
	var p receiverRecord
	if err := msgpack.Unmarshal(v, &p); err != nil {
		return receiverRecord{}, fmt.Errorf("%w: receiver %q of source %q: %v", ErrFormat, k, source, err)
	}
	// Only a registration creates a record without a position.
	if p.Seq == 0 && p.Session == "" {
		return receiverRecord{}, fmt.Errorf("%w: receiver %q of source %q recorded without a position", ErrFormat, k, source)
	}
	return p, nil
}

// decodeReceiver reads the record stored under key k as a position.
func decodeReceiver(source string, k, v []byte) (ReceiverPosition, error) {
	p, err := decodeReceiverRecord(source, k, v)
	if err != nil {
		return ReceiverPosition{}, err
	}
	return p.position(string(k)), nil
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

// Receiver returns what the group recorded about one receiver of source:
// known is false when the group does not hold the source, found false when
// it holds it but has no record of the receiver.
func (r *Repo) Receiver(source, receiver string) (pos ReceiverPosition, known, found bool, err error) {
	err = r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return nil
		}
		known = true
		rb := b.Bucket(bucketReceivers)
		if rb == nil || receiver == "" {
			return nil
		}
		v := rb.Get([]byte(receiver))
		if v == nil {
			return nil
		}
		found = true
		pos, err = decodeReceiver(source, []byte(receiver), v)
		return err
	})
	if err != nil {
		return ReceiverPosition{}, false, false, fmt.Errorf("read receiver %q of %q: %w", receiver, source, err)
	}
	return pos, known, found, nil
}
