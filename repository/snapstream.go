package repository

import (
	"io"

	bolt "go.etcd.io/bbolt"
)

// The snapshot stream a leader sends a member too far behind for its log
// (format "UMSNAP02"). It carries the repository's logical content, not its
// file: the leader's messages may live in its raft log (log runs), which
// the member does not share, so every retained message travels inline, and
// the member writes each straight into a fresh repository file, once.
//
//	"UMSNAP02" | applied index u64 | applied term u64
//	records: kind byte | uvarint body length | body
//	  'g' group:  uvarint len + id | index u64 | created u64
//	  'p' peer:   uvarint len + key | uvarint len + value   (meta/peer-groups)
//	  'm' member: uvarint len + name | uvarint len + record (meta/members)
//	  'l' level:  active level u64 (meta/active-level), only once raised above
//	              1: a stream of a group at level 1 is read by every version
//	  's' source: uvarint len + name | uvarint len + state | uvarint receivers,
//	              then per receiver uvarint len + name | uvarint len + record,
//	              then uvarint len + pacing record (length 0: not paced);
//	              then, outside the record, the source's messages in sequence
//	              order, as many as its state counts: len u32 | crc32c u32 | payload
//	'e' | crc32c u32 of every byte of the stream except the payloads
//
// Integers are big-endian. Each payload is checked against its CRC32C, and
// everything else against the closing CRC32C: together they cover the whole
// stream for a fraction of what a SHA-256 over it cost. The sequence
// numbers are not sent: they follow from the source's state (every number
// in (TrimmedThrough, HighSeq] outside its gaps is held).
const streamMagic2 = "UMSNAP02"

// logicalSize returns the exact size of the stream written from tx.
func logicalSize(tx *bolt.Tx) (int64, error) {
	cw := &countWriter{w: io.Discard}
	lw := &logicalWriter{w: cw, sizeOnly: true}
	if err := lw.write(tx, 0, 0); err != nil {
		return 0, err
	}
	return cw.n + lw.messageBytes, nil
}
