package repository

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Reading and writing a source's messages, stored as runs (see runs.go).

// msgCursor walks the messages of one source in sequence order, one message
// at a time, whatever runs they are stored in (see runs.go). Read, Digest,
// RetentionPlan and the duplicate check of Publish go through it.
//
// Like bbolt's own values, the payloads it returns point into the database
// (the memory map, or a value Put earlier in the transaction): they are
// valid only until the transaction ends and must not be modified; copy them
// to keep them. As with a bbolt cursor, changing the bucket (Put, Delete)
// invalidates the cursor: make a new one afterwards.
//
// Each method returns the sequence number and payload of the message it
// moved to, ok false when there is none, and an error wrapping ErrFormat
// (with ok false) when a run is damaged or runs overlap.
//
// A message stored with a CRC is checked against it as it is read: a
// mismatch, or a log run whose entry cannot be read, is an error wrapping
// ErrCorrupt (a *corruptAt naming the message), so a damaged payload is
// never returned. A lazy cursor reads no payload from the log and checks
// nothing: it serves sizes and CRCs (run.curLen, run.curCRC), its payloads
// are nil for log runs.
type msgCursor struct {
	c    *bolt.Cursor
	run  runReader // messages of the current run not returned yet
	seq  uint64    // sequence number of run's next message, if any
	end  uint64    // sequence number of the current run's last message
	log  *entryCache
	lazy bool
}

// corruptAt is a message that fails its check; it wraps ErrCorrupt.
type corruptAt struct {
	seq uint64
	err error
}

func (e *corruptAt) Error() string { return fmt.Sprintf("message %d: %v", e.seq, e.err) }
func (e *corruptAt) Unwrap() error { return e.err }

// newMsgCursor returns a cursor over the messages of a msgs bucket, not yet
// positioned: start with first or seek.
func newMsgCursor(msgs *bolt.Bucket) *msgCursor {
	return &msgCursor{c: msgs.Cursor()}
}

// first moves to the oldest message.
func (m *msgCursor) first() (seq uint64, payload []byte, ok bool, err error) {
	k, v := m.c.First()
	if k == nil {
		return 0, nil, false, nil
	}
	if err := m.load(k, v); err != nil {
		return 0, nil, false, err
	}
	return m.take()
}

// seek moves to the first message with a sequence number at or above
// target. That message may sit inside a run that starts before target.
func (m *msgCursor) seek(target uint64) (seq uint64, payload []byte, ok bool, err error) {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], target)
	k, v := m.c.Seek(key[:])
	if k != nil && binary.BigEndian.Uint64(k) == target {
		if err := m.load(k, v); err != nil {
			return 0, nil, false, err
		}
		return m.take()
	}
	// target is not the start of a run: it may be inside the run before.
	var pk, pv []byte
	if k == nil {
		pk, pv = m.c.Last()
	} else {
		pk, pv = m.c.Prev()
	}
	if pk == nil {
		if k == nil {
			return 0, nil, false, nil // no message at all
		}
		// The run at k is the first one: move back to it.
		if k, v = m.c.First(); k == nil {
			return 0, nil, false, nil
		}
		if err := m.load(k, v); err != nil {
			return 0, nil, false, err
		}
		return m.take()
	}
	if err := m.load(pk, pv); err != nil {
		return 0, nil, false, err
	}
	if m.end < target {
		// The run before ends before target: the answer is the first
		// message of the run after it, where next goes.
		m.run = runReader{}
		return m.next()
	}
	m.run.skip(int(target - m.seq))
	m.seq = target
	return m.take()
}

// next moves to the message after the current one.
func (m *msgCursor) next() (seq uint64, payload []byte, ok bool, err error) {
	if m.run.left > 0 {
		return m.take()
	}
	prevEnd := m.end
	k, v := m.c.Next()
	if k == nil {
		return 0, nil, false, nil
	}
	if err := m.load(k, v); err != nil {
		return 0, nil, false, err
	}
	if m.seq <= prevEnd {
		return 0, nil, false, fmt.Errorf("%w: message run at %d overlaps the one ending at %d", ErrFormat, m.seq, prevEnd)
	}
	return m.take()
}

// at returns the payload of message seq if it is held. It moves the cursor
// there (or past it), so looking up consecutive sequence numbers one after
// the other walks a run instead of seeking each time.
func (m *msgCursor) at(seq uint64) (payload []byte, ok bool, err error) {
	var got uint64
	if m.run.left > 0 && m.seq == seq {
		got, payload, ok, err = m.take()
	} else {
		got, payload, ok, err = m.seek(seq)
	}
	if !ok || got != seq {
		return nil, false, err
	}
	return payload, true, nil
}

// load makes the run with key k and value v the current one.
func (m *msgCursor) load(k, v []byte) error {
	if len(k) != 8 || v == nil {
		return fmt.Errorf("%w: messages bucket holds key %x, not a message run", ErrFormat, k)
	}
	first := binary.BigEndian.Uint64(k)
	r, err := openRun(v)
	if err != nil {
		return fmt.Errorf("message run at %d: %w", first, err)
	}
	end, err := lastSeq(first, r.left)
	if err != nil {
		return err
	}
	m.run, m.seq, m.end = r, first, end
	return nil
}

// take returns the current run's next message, read from the log for a
// log run and checked against its CRC, unless the cursor is lazy.
func (m *msgCursor) take() (seq uint64, payload []byte, ok bool, err error) {
	seq, payload = m.seq, m.run.next()
	if m.run.left > 0 {
		m.seq++ // never past end, so never past the largest sequence number
	}
	if m.lazy {
		return seq, payload, true, nil
	}
	if m.run.kind == runLog {
		if payload, err = m.log.payload(m.run.index, m.run.curPos); err != nil {
			return 0, nil, false, &corruptAt{seq: seq, err: err}
		}
		if len(payload) != m.run.curLen {
			return 0, nil, false, &corruptAt{seq: seq, err: fmt.Errorf("%w: raft log entry %d position %d holds %d bytes, the run says %d", ErrCorrupt, m.run.index, m.run.curPos, len(payload), m.run.curLen)}
		}
	}
	if m.run.curKnown && Checksum(payload) != m.run.curCRC {
		return 0, nil, false, &corruptAt{seq: seq, err: fmt.Errorf("%w: its payload of %d bytes does not match its CRC32C %08x", ErrCorrupt, len(payload), m.run.curCRC)}
	}
	return seq, payload, true, nil
}

// crc returns the CRC of the message returned last, and whether it has
// one (a message of a legacy run has none).
func (m *msgCursor) crc() (uint32, bool) { return m.run.curCRC, m.run.curKnown }

// putRuns stores payloads as messages first, first+1, ... with their CRCs:
// as log runs referring to the entry at index, from position pos of its
// Publish, when the repository indexes the log, else as inline runs; one
// run, or several when one would be larger than maxRunSize. None of these
// sequence numbers may be held already.
func (a *applier) putRuns(msgs *bolt.Bucket, first uint64, payloads [][]byte, crcs []uint32, index uint64, pos int) error {
	for len(payloads) > 0 {
		n := runCut(payloads, !a.logRuns, maxRunSize)
		var v []byte
		if a.logRuns {
			v = encodeLogRun(index, pos, payloads[:n], crcs[:n])
			if err := addLogRef(a.meta, index); err != nil {
				return err
			}
		} else {
			v = encodeInlineRun(payloads[:n], crcs[:n])
		}
		binary.BigEndian.PutUint64(a.key[:], first) // Put copies the key, not the value
		if err := msgs.Put(a.key[:], v); err != nil {
			return fmt.Errorf("store messages %d..%d: %w", first, first+uint64(n-1), err)
		}
		first += uint64(n)
		pos += n
		payloads, crcs = payloads[n:], crcs[n:]
	}
	return nil
}

// dropThrough deletes the messages at or below through, counting them and
// their bytes into tr, and returns the oldest message left (0 if none).
// Held messages all lie above TrimmedThrough, so the runs to drop are the
// first ones: each is deleted whole, except one straddling through, which is
// replaced by the run of its messages above through.
func (a *applier) dropThrough(msgs *bolt.Bucket, through uint64, tr *TrimResult) (low uint64, err error) {
	// The cursor is positioned afresh after each change.
	cur := msgs.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.First() {
		if len(k) != 8 {
			return 0, fmt.Errorf("%w: messages bucket holds key %x, not a message run", ErrFormat, k)
		}
		first := binary.BigEndian.Uint64(k)
		if first > through {
			return first, nil
		}
		r, err := openRun(v)
		if err != nil {
			return 0, fmt.Errorf("message run at %d: %w", first, err)
		}
		last, err := lastSeq(first, r.left)
		if err != nil {
			return 0, err
		}
		if last <= through {
			tr.Dropped += uint64(r.left)
			tr.DroppedBytes += r.size()
			if r.kind == runLog {
				if err := dropLogRef(a.meta, r.index); err != nil {
					return 0, err
				}
			}
			if err := cur.Delete(); err != nil {
				return 0, err
			}
			continue
		}
		dropped := int(through - first + 1)
		tr.Dropped += uint64(dropped)
		tr.DroppedBytes += r.skip(dropped)
		rest := r.encodeRest() // a copy: v goes with the Delete
		if err := cur.Delete(); err != nil {
			return 0, err
		}
		binary.BigEndian.PutUint64(a.key[:], through+1)
		if err := msgs.Put(a.key[:], rest); err != nil {
			return 0, fmt.Errorf("store messages %d..%d: %w", through+1, last, err)
		}
		return through + 1, nil
	}
	return 0, nil
}
