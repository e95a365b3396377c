package repository

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Writing the snapshot stream (format in snapstream.go): the leader walks
// its repository in one read transaction and sends every retained message
// inline, log runs included, replacing a damaged one by an intact copy.

// logicalWriter writes the stream; sizeOnly counts what the messages would
// take from the states, without reading them.
type logicalWriter struct {
	w        io.Writer
	crc      uint32
	sizeOnly bool
	// messageBytes counts, when sizeOnly, what the messages would take.
	messageBytes int64
	log          *entryCache
	buf          []byte
	// intact, if set, gives an intact copy of a message damaged in this
	// repository's files (see IntactCopy); without one a damaged message
	// fails the stream.
	intact IntactCopy
}

// IntactCopy returns an intact copy of message seq of source, whose
// payload's CRC32C is crc, found elsewhere (another member of the group,
// another group): the store's damage repair. A copy is used only if it
// matches crc.
type IntactCopy func(source string, seq uint64, crc uint32) ([]byte, bool)

// copyOf replaces a message the cursor found damaged (err, from take) with
// an intact copy, or returns err.
func (lw *logicalWriter) copyOf(source string, mc *msgCursor, err error) (uint64, []byte, error) {
	var ca *corruptAt
	if lw.intact == nil || !errors.As(err, &ca) {
		return 0, nil, err
	}
	crc, known := mc.crc()
	if !known {
		return 0, nil, err
	}
	p, ok := lw.intact(source, ca.seq, crc)
	if !ok || len(p) != mc.run.curLen || Checksum(p) != crc {
		return 0, nil, err
	}
	return ca.seq, p, nil
}

// frame writes framing bytes, covered by the closing CRC.
func (lw *logicalWriter) frame(b []byte) error {
	lw.crc = crc32.Update(lw.crc, castagnoli, b)
	_, err := lw.w.Write(b)
	return err
}

func (lw *logicalWriter) record(kind byte, body []byte) error {
	lw.buf = binary.AppendUvarint(append(lw.buf[:0], kind), uint64(len(body)))
	if err := lw.frame(lw.buf); err != nil {
		return err
	}
	return lw.frame(body)
}

func appendField(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func (lw *logicalWriter) write(tx *bolt.Tx, index, term uint64) error {
	hdr := make([]byte, 0, 24)
	hdr = append(hdr, streamMagic2...)
	hdr = binary.BigEndian.AppendUint64(hdr, index)
	hdr = binary.BigEndian.AppendUint64(hdr, term)
	if err := lw.frame(hdr); err != nil {
		return err
	}
	meta := tx.Bucket(bucketMeta)
	g := readGroup(meta)
	body := appendField(nil, []byte(g.id))
	body = binary.BigEndian.AppendUint64(body, uint64(int64(g.index)))
	body = binary.BigEndian.AppendUint64(body, uint64(g.created))
	if err := lw.record('g', body); err != nil {
		return err
	}
	if pb := meta.Bucket(bucketPeerGroups); pb != nil {
		err := pb.ForEach(func(k, v []byte) error {
			return lw.record('p', appendField(appendField(nil, k), v))
		})
		if err != nil {
			return err
		}
	}
	// The active level (level.go), only once raised: a store of level 1
	// refuses a stream with a record it does not know, and is no member
	// of a group at a higher level.
	if l := readActiveLevel(meta); l > 1 {
		if err := lw.record('l', binary.BigEndian.AppendUint64(nil, uint64(l))); err != nil {
			return err
		}
	}
	// The member address book (MemberAddress, members.go), only when a
	// member ever moved: a stream without one is read by every version.
	if mb := meta.Bucket(bucketMembers); mb != nil {
		err := mb.ForEach(func(k, v []byte) error {
			return lw.record('m', appendField(appendField(nil, k), v))
		})
		if err != nil {
			return err
		}
	}
	c := tx.Bucket(bucketSources).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil {
			continue
		}
		if err := lw.source(tx.Bucket(bucketSources).Bucket(k), string(k)); err != nil {
			return err
		}
	}
	var end [5]byte
	end[0] = 'e'
	binary.BigEndian.PutUint32(end[1:], lw.crc)
	_, err := lw.w.Write(end[:])
	return err
}

func (lw *logicalWriter) source(b *bolt.Bucket, name string) error {
	stateRaw := b.Get(keyState)
	st, err := decodeState(stateRaw)
	if err != nil {
		return fmt.Errorf("source %q: %w", name, err)
	}
	body := appendField(appendField(nil, []byte(name)), stateRaw)
	var recs [][2][]byte
	if rb := b.Bucket(bucketReceivers); rb != nil {
		_ = rb.ForEach(func(k, v []byte) error {
			recs = append(recs, [2][]byte{k, v})
			return nil
		})
	}
	body = binary.AppendUvarint(body, uint64(len(recs)))
	for _, r := range recs {
		body = appendField(appendField(body, r[0]), r[1])
	}
	body = appendField(body, b.Get(keyPacing))
	if err := lw.record('s', body); err != nil {
		return err
	}
	if lw.sizeOnly {
		lw.messageBytes += int64(8*st.Count + st.Bytes)
		return nil
	}
	msgs := b.Bucket(bucketMsgs)
	if msgs == nil {
		return fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, name)
	}
	mc := newMsgCursor(msgs)
	mc.log = lw.log
	var count, size uint64
	var head [8]byte
	seq, p, ok, err := mc.first()
	for ; ok || err != nil; seq, p, ok, err = mc.next() {
		if err != nil {
			// The cursor is past the damaged message: a copy takes its
			// place, and the walk goes on.
			if seq, p, err = lw.copyOf(name, mc, err); err != nil {
				break
			}
		}
		if !st.holds(seq) {
			return fmt.Errorf("%w: source %q holds message %d, which its bookkeeping does not", ErrFormat, name, seq)
		}
		sum, known := mc.crc()
		if !known {
			sum = Checksum(p)
		}
		binary.BigEndian.PutUint32(head[:], uint32(len(p)))
		binary.BigEndian.PutUint32(head[4:], sum)
		if err := lw.frame(head[:]); err != nil {
			return err
		}
		if _, err := lw.w.Write(p); err != nil {
			return err
		}
		count++
		size += uint64(len(p))
	}
	if err != nil {
		return fmt.Errorf("source %q: %w", name, err)
	}
	if count != st.Count || size != st.Bytes {
		return fmt.Errorf("%w: source %q holds %d messages of %d bytes, its bookkeeping says %d of %d", ErrFormat, name, count, size, st.Count, st.Bytes)
	}
	return nil
}
