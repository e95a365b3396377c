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
// first (8 bytes big-endian). A run is one of three kinds:
//
// A legacy run (format version 2, no checksums; still read, never written):
//
//	uvarint n                            how many messages, at least 1
//	uvarint len(payload)  × n            their payload lengths, in sequence order
//	payload₀ ‖ payload₁ ‖ … ‖ payloadₙ₋₁  the payloads, back to back
//
// An inline run (format version 3): the payloads in the file, each with its
// CRC32C:
//
//	0x00 0x01 | uvarint n | uvarint len × n | crc32c × n (4 bytes big-endian) | payloads
//
// A log run (format version 3): the payloads stay in the raft log entry that
// carried them, so each is written once per store; the run says where, with
// each message's length and CRC32C:
//
//	0x00 0x02 | uvarint n | uvarint log index | uvarint position | uvarint len × n | crc32c × n
//
// where message first+i is payload position+i of the Publish in the entry at
// log index. A legacy run never starts with 0x00 (its count is at least 1),
// which is how the kinds are told apart in a file upgraded from version 2.
//
// A run holds every sequence number of its range (no holes), runs of one
// source never overlap, and every message held is in exactly one run.
// Adjacent runs are not merged: how messages are cut into runs depends only
// on the Publish entries that stored them, and nothing observable (Read,
// Digest, RetentionPlan) depends on it.

// Run kinds, the second byte of a version 3 run.
const (
	runLegacy byte = 0 // no marker: format version 2
	runInline byte = 1
	runLog    byte = 2
)

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

// encodeInlineRun encodes payloads (at least one) and their CRCs as an
// inline run, in a new buffer.
func encodeInlineRun(payloads [][]byte, crcs []uint32) []byte {
	size := 2 + uvarintLen(uint64(len(payloads))) + 4*len(payloads)
	for _, p := range payloads {
		size += uvarintLen(uint64(len(p))) + len(p)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, 0, runInline)
	buf = binary.AppendUvarint(buf, uint64(len(payloads)))
	for _, p := range payloads {
		buf = binary.AppendUvarint(buf, uint64(len(p)))
	}
	for _, c := range crcs {
		buf = binary.BigEndian.AppendUint32(buf, c)
	}
	for _, p := range payloads {
		buf = append(buf, p...)
	}
	return buf
}

// encodeLogRun encodes a log run of the payloads (at least one) found from
// position pos of the Publish in the log entry at index.
func encodeLogRun(index uint64, pos int, payloads [][]byte, crcs []uint32) []byte {
	lens := make([]int, len(payloads))
	for i, p := range payloads {
		lens[i] = len(p)
	}
	return encodeLogRunLens(index, uint64(pos), lens, crcs)
}

// encodeLogRunLens is encodeLogRun given the payloads' lengths.
func encodeLogRunLens(index, pos uint64, lens []int, crcs []uint32) []byte {
	size := 2 + uvarintLen(uint64(len(lens))) + uvarintLen(index) + uvarintLen(pos) + 4*len(lens)
	for _, l := range lens {
		size += uvarintLen(uint64(l))
	}
	buf := make([]byte, 0, size)
	buf = append(buf, 0, runLog)
	buf = binary.AppendUvarint(buf, uint64(len(lens)))
	buf = binary.AppendUvarint(buf, index)
	buf = binary.AppendUvarint(buf, pos)
	for _, l := range lens {
		buf = binary.AppendUvarint(buf, uint64(l))
	}
	for _, c := range crcs {
		buf = binary.BigEndian.AppendUint32(buf, c)
	}
	return buf
}

// runCut returns how many of the leading payloads fit in one run of at
// most limit bytes, a run costing per message its length's bytes, 4 for
// its CRC, and its payload when inline; at least one.
func runCut(payloads [][]byte, inline bool, limit int) int {
	body := 2 + binary.MaxVarintLen64*2
	for i, p := range payloads {
		body += uvarintLen(uint64(len(p))) + 4
		if inline {
			body += len(p)
		}
		if i > 0 && uvarintLen(uint64(i+1))+body > limit {
			return i
		}
	}
	return len(payloads)
}

// runReader reads the messages of one run in order. Its payloads are
// slices of the run's value, never copies; a log run has none (the cursor
// reads them from the log).
type runReader struct {
	kind byte
	lens []byte // encoded lengths of the messages not read yet
	crcs []byte // their CRCs, 4 bytes each; nil in a legacy run
	data []byte // their payloads (legacy and inline runs)
	left int    // how many

	index uint64 // log run: the entry holding the payloads
	pos   uint64 // log run: position in that entry of the next message

	// Of the message next returned last: its length, CRC, whether the run
	// has one (not in a legacy run), and its position in the entry.
	curLen   int
	curCRC   uint32
	curKnown bool
	curPos   uint64
}

// openRun checks that v is a whole, well-formed run of any kind and returns
// a reader at its first message. A damaged value (truncated, a count of 0
// or larger than the value could hold, lengths beyond its end, bytes after
// the last payload, an unknown kind) gives an error wrapping ErrFormat. It
// allocates nothing.
func openRun(v []byte) (runReader, error) {
	if len(v) > 0 && v[0] == 0 {
		return openMarkedRun(v)
	}
	n, k := binary.Uvarint(v)
	switch {
	case k <= 0:
		return runReader{}, fmt.Errorf("%w: message run of %d bytes has no readable count", ErrFormat, len(v))
	case n == 0:
		return runReader{}, fmt.Errorf("%w: message run holds no message", ErrFormat)
	case n > uint64(len(v)-k): // every length takes at least one byte
		return runReader{}, fmt.Errorf("%w: message run of %d bytes claims %d messages", ErrFormat, len(v), n)
	}
	pos, payloads, err := readLens(v, k, n, true)
	if err != nil {
		return runReader{}, err
	}
	if payloads != uint64(len(v)-pos) {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes: its %d messages take %d payload bytes, %d follow the lengths", ErrFormat, len(v), n, payloads, len(v)-pos)
	}
	return runReader{kind: runLegacy, lens: v[k:pos], data: v[pos:], left: int(n)}, nil
}

// readLens checks the n lengths that start at v[k:] and returns where they
// end and their total; the payloads must fit in v, or, for a log run
// (inValue false), each in a message.
func readLens(v []byte, k int, n uint64, inValue bool) (end int, total uint64, err error) {
	end = k
	for i := uint64(0); i < n; i++ {
		l, m := binary.Uvarint(v[end:])
		if m <= 0 {
			return 0, 0, fmt.Errorf("%w: message run of %d bytes: length %d of %d unreadable", ErrFormat, len(v), i+1, n)
		}
		end += m
		if !inValue {
			if l > maxPayloadSize {
				return 0, 0, fmt.Errorf("%w: log run: a length of %d bytes", ErrFormat, l)
			}
			total += l
			continue
		}
		if l > uint64(len(v))-total {
			return 0, 0, fmt.Errorf("%w: message run of %d bytes: lengths run past its end", ErrFormat, len(v))
		}
		total += l
	}
	return end, total, nil
}

// openMarkedRun opens an inline or log run (v[0] is 0).
func openMarkedRun(v []byte) (runReader, error) {
	if len(v) < 3 || (v[1] != runInline && v[1] != runLog) {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes of unknown kind", ErrFormat, len(v))
	}
	r := runReader{kind: v[1]}
	k := 2
	n, m := binary.Uvarint(v[k:])
	if m <= 0 || n == 0 || n > uint64(len(v)-k) {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes: bad count", ErrFormat, len(v))
	}
	k += m
	if r.kind == runLog {
		idx, m1 := binary.Uvarint(v[k:])
		if m1 <= 0 {
			return runReader{}, fmt.Errorf("%w: log run of %d bytes: no log index", ErrFormat, len(v))
		}
		pos, m2 := binary.Uvarint(v[k+m1:])
		if m2 <= 0 || idx == 0 {
			return runReader{}, fmt.Errorf("%w: log run of %d bytes: no position", ErrFormat, len(v))
		}
		r.index, r.pos = idx, pos
		k += m1 + m2
	}
	end, total, err := readLens(v, k, n, r.kind == runInline)
	if err != nil {
		return runReader{}, err
	}
	if uint64(len(v)-end) < 4*n {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes: its %d checksums are cut", ErrFormat, len(v), n)
	}
	rest := uint64(len(v)-end) - 4*n
	want := total
	if r.kind == runLog {
		want = 0
	}
	if rest != want {
		return runReader{}, fmt.Errorf("%w: message run of %d bytes: %d bytes after the checksums, want %d", ErrFormat, len(v), rest, want)
	}
	r.lens, r.crcs, r.left = v[k:end], v[end:end+4*int(n)], int(n)
	if r.kind == runInline {
		r.data = v[end+4*int(n):]
	}
	return r, nil
}

// next returns the next message's payload (nil in a log run) and records
// its length, CRC and position. There must be one (left > 0); openRun
// checked that every length fits.
func (r *runReader) next() []byte {
	l, k := binary.Uvarint(r.lens)
	r.lens = r.lens[k:]
	r.curLen = int(l)
	r.curKnown = r.crcs != nil
	if r.curKnown {
		r.curCRC = binary.BigEndian.Uint32(r.crcs)
		r.crcs = r.crcs[4:]
	}
	r.curPos = r.pos
	r.pos++
	r.left--
	if r.kind == runLog {
		return nil
	}
	p := r.data[:l:l]
	r.data = r.data[l:]
	return p
}

// skip passes over the next n messages (at most left) and returns their
// payload bytes.
func (r *runReader) skip(n int) (size uint64) {
	for ; n > 0; n-- {
		r.next()
		size += uint64(r.curLen)
	}
	return size
}

// size returns the payload bytes of the messages not read yet.
func (r *runReader) size() uint64 {
	if r.kind != runLog {
		return uint64(len(r.data))
	}
	total, lens := uint64(0), r.lens
	for len(lens) > 0 {
		l, k := binary.Uvarint(lens)
		lens = lens[k:]
		total += l
	}
	return total
}

// encodeRest encodes the messages not read yet (at least one) as a run of
// their own, of the same kind, in a new buffer.
func (r *runReader) encodeRest() []byte {
	switch r.kind {
	case runInline:
		buf := make([]byte, 0, 2+uvarintLen(uint64(r.left))+len(r.lens)+len(r.crcs)+len(r.data))
		buf = append(buf, 0, runInline)
		buf = binary.AppendUvarint(buf, uint64(r.left))
		buf = append(buf, r.lens...)
		buf = append(buf, r.crcs...)
		return append(buf, r.data...)
	case runLog:
		buf := make([]byte, 0, 2+uvarintLen(uint64(r.left))+uvarintLen(r.index)+uvarintLen(r.pos)+len(r.lens)+len(r.crcs))
		buf = append(buf, 0, runLog)
		buf = binary.AppendUvarint(buf, uint64(r.left))
		buf = binary.AppendUvarint(buf, r.index)
		buf = binary.AppendUvarint(buf, r.pos)
		buf = append(buf, r.lens...)
		return append(buf, r.crcs...)
	}
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
