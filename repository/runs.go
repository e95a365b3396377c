package repository

import (
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"
)

// A source's messages are stored in runs: one bbolt value per stretch of
// consecutive messages that one Publish stored, so that a Publish of many
// messages costs one Put instead of one per message. The run holding
// messages first..first+n-1 is stored in the source's msgs bucket under
// first (8 bytes big-endian) and encodes as
//
//	uvarint n                            how many messages, at least 1
//	uvarint len(payload)  × n            their payload lengths, in sequence order
//	payload₀ ‖ payload₁ ‖ … ‖ payloadₙ₋₁  the payloads, back to back
//
// A run holds every sequence number of its range (no holes), runs of one
// source never overlap, and every message held is in exactly one run.
// Adjacent runs are not merged: how messages are cut into runs depends only
// on the Publish entries that stored them, and nothing observable (Read,
// Digest, RetentionPlan) depends on it.

// maxRunSize bounds the encoded size of a run of several messages; a Publish
// whose stored messages need more is cut into several runs. Above a few
// pages a Put costs its copying, not its lookup, so cutting costs little.
// Small runs matter because bbolt rewrites the whole leaf it appends to, and
// a leaf keeps at least two values: with 1 MiB runs every transaction wrote
// its new run plus one to three earlier ones again (measured: 2–4.5 bytes
// written per byte stored, against 1.1–1.2 with runs of 16–64 KiB). The
// bound also keeps small the contiguous pages bbolt must find for one value
// and what a Trim through a run's middle rewrites. A single message larger
// than this forms a run of its own.
const maxRunSize = 32 << 10

// maxPayloadSize is the largest payload a message may have: its run of one
// (a count byte, a length of at most binary.MaxVarintLen32 bytes since
// bolt.MaxValueSize < 2³¹, and the payload) must fit in a bbolt value. Every
// payload above it has a 5-byte length, so the bound is exact.
const maxPayloadSize = bolt.MaxValueSize - 1 - binary.MaxVarintLen32

// uvarintLen returns how many bytes binary.AppendUvarint takes for x.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// runSize returns how many bytes encodeRun takes for payloads.
func runSize(payloads [][]byte) int {
	size := uvarintLen(uint64(len(payloads)))
	for _, p := range payloads {
		size += uvarintLen(uint64(len(p))) + len(p)
	}
	return size
}

// runPrefix returns how many of the leading payloads fit in one run of at
// most limit bytes; at least one, whatever its size, when payloads is not
// empty.
func runPrefix(payloads [][]byte, limit int) int {
	body := 0
	for i, p := range payloads {
		body += uvarintLen(uint64(len(p))) + len(p)
		if i > 0 && uvarintLen(uint64(i+1))+body > limit {
			return i
		}
	}
	return len(payloads)
}

// encodeRun encodes payloads (at least one) as a run, in a new buffer: bbolt
// keeps a Put value, unread, until the transaction commits, so no two Puts
// may share one.
func encodeRun(payloads [][]byte) []byte {
	buf := make([]byte, 0, runSize(payloads))
	buf = binary.AppendUvarint(buf, uint64(len(payloads)))
	for _, p := range payloads {
		buf = binary.AppendUvarint(buf, uint64(len(p)))
	}
	for _, p := range payloads {
		buf = append(buf, p...)
	}
	return buf
}

// runReader reads the messages of one run in order. Its payloads are
// slices of the run's value, never copies.
type runReader struct {
	lens []byte // encoded lengths of the messages not read yet
	data []byte // their payloads
	left int    // how many
}

// openRun checks that v is a whole, well-formed run and returns a reader at
// its first message. A damaged value (truncated, a count of 0 or larger than
// the value could hold, lengths beyond its end, bytes after the last
// payload) gives an error wrapping ErrFormat. It allocates nothing.
func openRun(v []byte) (runReader, error) {
	n, k := binary.Uvarint(v)
	switch {
	case k <= 0:
		return runReader{}, fmt.Errorf("%w: message run of %d bytes has no readable count", ErrFormat, len(v))
	case n == 0:
		return runReader{}, fmt.Errorf("%w: message run holds no message", ErrFormat)
	case n > uint64(len(v)-k): // every length takes at least one byte
		return runReader{}, fmt.Errorf("%w: message run of %d bytes claims %d messages", ErrFormat, len(v), n)
	}
	pos := k
	payloads := uint64(0) // total of the lengths read so far, at most len(v)
	for i := uint64(0); i < n; i++ {
		l, m := binary.Uvarint(v[pos:])
		if m <= 0 {
			return runReader{}, fmt.Errorf("%w: message run of %d bytes: length %d of %d unreadable", ErrFormat, len(v), i+1, n)
		}
		pos += m
		if l > uint64(len(v))-payloads {
			return runReader{}, fmt.Errorf("%w: message run of %d bytes: lengths run past its end", ErrFormat, len(v))
		}
		payloads += l
	}
	if payloads != uint64(len(v)-pos) {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes: its %d messages take %d payload bytes, %d follow the lengths", ErrFormat, len(v), n, payloads, len(v)-pos)
	}
	return runReader{lens: v[k:pos], data: v[pos:], left: int(n)}, nil
}

// next returns the next message's payload. There must be one (left > 0);
// openRun checked that every length fits.
func (r *runReader) next() []byte {
	l, k := binary.Uvarint(r.lens)
	r.lens = r.lens[k:]
	p := r.data[:l:l]
	r.data = r.data[l:]
	r.left--
	return p
}

// skip passes over the next n messages (at most left) and returns their
// payload bytes.
func (r *runReader) skip(n int) (size uint64) {
	for ; n > 0; n-- {
		size += uint64(len(r.next()))
	}
	return size
}

// size returns the payload bytes of the messages not read yet.
func (r *runReader) size() uint64 { return uint64(len(r.data)) }

// encodeRest encodes the messages not read yet (at least one) as a run of
// their own, in a new buffer.
func (r *runReader) encodeRest() []byte {
	buf := make([]byte, 0, uvarintLen(uint64(r.left))+len(r.lens)+len(r.data))
	buf = binary.AppendUvarint(buf, uint64(r.left))
	buf = append(buf, r.lens...)
	return append(buf, r.data...)
}

// lastSeq returns the sequence number of the last message of a run of n
// messages starting at first, refusing a run that would pass the largest
// sequence number (a damaged file).
func lastSeq(first uint64, n int) (uint64, error) {
	if first == 0 || uint64(n-1) > math.MaxUint64-first {
		return 0, fmt.Errorf("%w: message run of %d messages at sequence number %d", ErrFormat, n, first)
	}
	return first + uint64(n-1), nil
}
