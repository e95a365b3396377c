package repository

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

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

// restoreBatchBytes is how many payload bytes a restore writes per bbolt
// transaction of the new file (a variable for tests).
var restoreBatchBytes = 8 << 20

// buildFromStream reads a UMSNAP02 stream (its magic already read) from
// rd and writes the repository it carries to a new file beside the
// repository, synced. It returns the file's path and the group it holds.
func (r *Repo) buildFromStream(rd io.Reader) (path, group string, index uint64, err error) {
	br := bufio.NewReaderSize(rd, 1<<20)
	sr := &streamReader{r: br, crc: crc32.Update(0, castagnoli, []byte(streamMagic2))}
	var hdr [16]byte
	sr.framed(hdr[:])
	index, term := binary.BigEndian.Uint64(hdr[:]), binary.BigEndian.Uint64(hdr[8:])
	if sr.err != nil {
		return "", "", 0, fmt.Errorf("%w: snapshot stream too short for its header: %v", ErrFormat, sr.err)
	}
	dir, base := filepath.Split(r.path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+restoreTempInfix+"*")
	if err != nil {
		return "", "", 0, err
	}
	tmp := f.Name()
	f.Close()
	fail := func(err error) (string, string, uint64, error) {
		os.Remove(tmp)
		return "", "", 0, err
	}
	opts := r.opts
	opts.NoSync = true // synced once at the end
	db, err := bolt.Open(tmp, 0o600, opts.bolt(false))
	if err != nil {
		return fail(err)
	}
	b := &builder{db: db, sr: sr}
	err = b.build(index, term)
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	return tmp, b.group, index, nil
}

// streamReader reads the stream, keeping the closing CRC of the framing.
type streamReader struct {
	r   *bufio.Reader
	crc uint32
	err error
}

func (s *streamReader) framed(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.err = err
		return
	}
	s.crc = crc32.Update(s.crc, castagnoli, b)
}

func (s *streamReader) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s.r)
	if err != nil {
		s.err = err
		return 0
	}
	s.crc = crc32.Update(s.crc, castagnoli, binary.AppendUvarint(nil, v))
	return v
}

// field reads a uvarint-prefixed field of at most limit bytes.
func (s *streamReader) field(limit uint64) []byte {
	n := s.uvarint()
	if s.err == nil && n > limit {
		s.err = fmt.Errorf("field of %d bytes, at most %d expected", n, limit)
	}
	if s.err != nil {
		return nil
	}
	b := make([]byte, n)
	s.framed(b)
	return b
}

// builder writes the new repository file from the stream.
type builder struct {
	db    *bolt.DB
	sr    *streamReader
	group string
}

func (b *builder) build(index, term uint64) error {
	sr := b.sr
	err := b.db.Update(func(tx *bolt.Tx) error {
		if err := initFormat(tx); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyAppliedIndex, u64(index)); err != nil {
			return err
		}
		return meta.Put(keyAppliedTerm, u64(term))
	})
	if err != nil {
		return err
	}
	for {
		var kind [1]byte
		if _, err := io.ReadFull(sr.r, kind[:]); err != nil {
			return fmt.Errorf("%w: snapshot stream truncated: %v", ErrFormat, err)
		}
		if kind[0] == 'e' {
			var sum [4]byte
			if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
				return fmt.Errorf("%w: snapshot checksum missing: %v", ErrFormat, err)
			}
			if binary.BigEndian.Uint32(sum[:]) != sr.crc {
				return fmt.Errorf("%w: snapshot checksum mismatch: the stream was damaged in transit or storage", ErrFormat)
			}
			if n, _ := sr.r.Read(sum[:1]); n != 0 {
				return fmt.Errorf("%w: unexpected data after the snapshot", ErrFormat)
			}
			return nil
		}
		sr.crc = crc32.Update(sr.crc, castagnoli, kind[:])
		size := sr.uvarint()
		if sr.err == nil && size > 64<<20 {
			sr.err = fmt.Errorf("record of %d bytes", size)
		}
		if sr.err != nil {
			return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, sr.err)
		}
		body := make([]byte, size)
		sr.framed(body)
		if sr.err != nil {
			return fmt.Errorf("%w: snapshot stream truncated: %v", ErrFormat, sr.err)
		}
		var err error
		switch kind[0] {
		case 'g':
			err = b.groupRecord(body)
		case 'p':
			err = b.peerRecord(body)
		case 'm':
			err = b.memberRecord(body)
		case 's':
			err = b.sourceRecord(body)
		default:
			err = fmt.Errorf("%w: snapshot stream: unknown record kind 0x%02x", ErrFormat, kind[0])
		}
		if err != nil {
			return err
		}
	}
}

// fields splits a record body into its uvarint-prefixed fields and
// fixed-size integers, refusing a body that does not parse.
type fields struct {
	b   []byte
	err error
}

func (f *fields) next() []byte {
	n, k := binary.Uvarint(f.b)
	if f.err != nil || k <= 0 || n > uint64(len(f.b)-k) {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return nil
	}
	v := f.b[k : k+int(n)]
	f.b = f.b[k+int(n):]
	return v
}

func (f *fields) u64() uint64 {
	if f.err != nil || len(f.b) < 8 {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return 0
	}
	v := binary.BigEndian.Uint64(f.b)
	f.b = f.b[8:]
	return v
}

func (f *fields) count() uint64 {
	n, k := binary.Uvarint(f.b)
	if f.err != nil || k <= 0 {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return 0
	}
	f.b = f.b[k:]
	return n
}

func (f *fields) done() error {
	if f.err == nil && len(f.b) != 0 {
		f.err = fmt.Errorf("%w: snapshot stream: %d bytes left in a record", ErrFormat, len(f.b))
	}
	return f.err
}

func (b *builder) groupRecord(body []byte) error {
	f := fields{b: body}
	id, idx, created := f.next(), f.u64(), f.u64()
	if err := f.done(); err != nil {
		return err
	}
	b.group = string(id)
	if len(id) == 0 {
		return nil
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyGroupID, id); err != nil {
			return err
		}
		if err := meta.Put(keyGroupIndex, u64(idx)); err != nil {
			return err
		}
		return meta.Put(keyGroupCreated, u64(created))
	})
}

func (b *builder) peerRecord(body []byte) error {
	f := fields{b: body}
	k, v := f.next(), f.next()
	if err := f.done(); err != nil {
		return err
	}
	if _, err := decodePeer(k, v); err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		pb, err := tx.Bucket(bucketMeta).CreateBucketIfNotExists(bucketPeerGroups)
		if err != nil {
			return err
		}
		return pb.Put(k, v)
	})
}

// memberRecord writes one member's addresses, refusing a record that apply
// would not have written (no name, an address missing).
func (b *builder) memberRecord(body []byte) error {
	f := fields{b: body}
	k, v := f.next(), f.next()
	if err := f.done(); err != nil {
		return err
	}
	m, err := decodeMember(k, v)
	if err == nil && (m.RaftAddr == "" || m.ClientAddr == "") {
		err = fmt.Errorf("member %q without an address", m.Name)
	}
	if err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		mb, err := tx.Bucket(bucketMeta).CreateBucketIfNotExists(bucketMembers)
		if err != nil {
			return err
		}
		return mb.Put(k, v)
	})
}

// sourceRecord creates a source from its record, then reads its messages
// from the stream into inline runs, a transaction per restoreBatchBytes.
func (b *builder) sourceRecord(body []byte) error {
	f := fields{b: body}
	name, stateRaw := f.next(), f.next()
	nrec := f.count()
	var recs [][2][]byte
	for i := uint64(0); i < nrec && f.err == nil; i++ {
		recs = append(recs, [2][]byte{f.next(), f.next()})
	}
	pacing := f.next()
	if err := f.done(); err != nil {
		return err
	}
	if err := validSourceName(string(name)); err != nil {
		return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
	}
	st, err := decodeState(stateRaw)
	if err != nil {
		return fmt.Errorf("%w: snapshot stream: source %q: %v", ErrFormat, name, err)
	}
	err = b.db.Update(func(tx *bolt.Tx) error {
		sb, err := tx.Bucket(bucketSources).CreateBucket(name)
		if err != nil {
			return fmt.Errorf("%w: snapshot stream: source %q: %v", ErrFormat, name, err)
		}
		if _, err := sb.CreateBucket(bucketMsgs); err != nil {
			return err
		}
		if err := sb.Put(keyState, stateRaw); err != nil {
			return err
		}
		if len(recs) > 0 {
			rb, err := sb.CreateBucket(bucketReceivers)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if _, err := decodeReceiver(string(name), r[0], r[1]); err != nil {
					return fmt.Errorf("%w: snapshot stream: %v", ErrFormat, err)
				}
				if err := rb.Put(r[0], r[1]); err != nil {
					return err
				}
			}
		}
		if len(pacing) > 0 {
			if err := sb.Put(keyPacing, pacing); err != nil {
				return err
			}
			if _, err := readPacing(string(name), sb); err != nil {
				return fmt.Errorf("snapshot stream: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return b.messages(string(name), &st)
}

// messages reads the source's st.Count messages, assigning them the
// sequence numbers st holds, in order. Reading the stream (and checking
// each payload's CRC) and writing the file run side by side: a goroutine
// reads runs into batches of about restoreBatchBytes, and this one commits
// each batch in a transaction of its own while the next is read, so the
// sender is not held up by the file's commits.
func (b *builder) messages(name string, st *sourceState) error {
	batches := make(chan runBatch, 2)
	stop := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		defer close(batches)
		read <- b.readRuns(name, st, batches, stop)
	}()
	var err error
	for batch := range batches {
		if err != nil {
			continue // drain: the reader stops at its next batch
		}
		err = b.db.Update(func(tx *bolt.Tx) error {
			msgs := tx.Bucket(bucketSources).Bucket([]byte(name)).Bucket(bucketMsgs)
			msgs.FillPercent = msgsFillPercent
			for _, r := range batch {
				if err := msgs.Put(u64(r.first), r.value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			close(stop)
		}
	}
	if rerr := <-read; err == nil {
		err = rerr
	}
	return err
}

// runBatch is the runs read for one transaction of the new file.
type runBatch []encodedRun

// encodedRun is an inline run and the sequence number of its first message.
type encodedRun struct {
	first uint64
	value []byte
}

// readRuns reads the source's st.Count messages from the stream into
// inline runs, sent in batches of about restoreBatchBytes, until done or
// stop is closed.
func (b *builder) readRuns(name string, st *sourceState, out chan<- runBatch, stop <-chan struct{}) error {
	seqs := heldIter{st: st, next: st.TrimmedThrough + 1}
	left := st.Count
	var total uint64
	var (
		batch      runBatch
		batchBytes int
		run        [][]byte
		crcs       []uint32
		first      uint64
		prev       uint64
		// arena holds the payloads of the run being read: they are copied
		// into the run's value when it is cut, so one buffer serves every
		// run instead of an allocation per message.
		arena = make([]byte, 0, maxRunSize)
	)
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case out <- batch:
		case <-stop:
			return false
		}
		batch, batchBytes = nil, 0
		return true
	}
	cut := func() {
		if len(run) == 0 {
			return
		}
		v := encodeInlineRun(run, crcs)
		batch = append(batch, encodedRun{first: first, value: v})
		batchBytes += len(v)
		run, crcs, arena = run[:0], crcs[:0], arena[:0]
	}
	for left > 0 {
		seq, ok := seqs.take()
		if !ok {
			return fmt.Errorf("%w: snapshot stream: source %q counts %d messages more than its ranges hold", ErrFormat, name, left)
		}
		var head [8]byte
		b.sr.framed(head[:])
		if b.sr.err != nil {
			return fmt.Errorf("%w: snapshot stream truncated in source %q: %v", ErrFormat, name, b.sr.err)
		}
		l, sum := binary.BigEndian.Uint32(head[:]), binary.BigEndian.Uint32(head[4:])
		if l > maxPayloadSize {
			return fmt.Errorf("%w: snapshot stream: message %d of source %q of %d bytes", ErrFormat, seq, name, l)
		}
		var p []byte
		inArena := int(l) <= cap(arena)-len(arena)
		if inArena {
			p = arena[len(arena) : len(arena)+int(l)]
		} else {
			p = make([]byte, l) // larger than what the arena has left
		}
		if _, err := io.ReadFull(b.sr.r, p); err != nil {
			return fmt.Errorf("%w: snapshot stream truncated in source %q: %v", ErrFormat, name, err)
		}
		if Checksum(p) != sum {
			return fmt.Errorf("%w: snapshot stream: message %d of source %q does not match its CRC32C: damaged in transit or at the sender", ErrFormat, seq, name)
		}
		if len(run) > 0 && (seq != prev+1 || runCut(append(run, p), true, maxRunSize) <= len(run)) {
			cut()
			if inArena {
				p = arena[:copy(arena[:l], p)] // the next run starts the arena again
			}
			if batchBytes >= restoreBatchBytes && !send() {
				return nil
			}
		}
		if inArena {
			arena = arena[:len(arena)+int(l)]
		}
		if len(run) == 0 {
			first = seq
		}
		run, crcs = append(run, p), append(crcs, sum)
		prev = seq
		total += uint64(l)
		left--
	}
	cut()
	if !send() {
		return nil
	}
	if total != st.Bytes {
		return fmt.Errorf("%w: snapshot stream: source %q carries %d payload bytes, its state counts %d", ErrFormat, name, total, st.Bytes)
	}
	return nil
}

// heldIter yields the sequence numbers a source's state holds, ascending.
type heldIter struct {
	st   *sourceState
	next uint64
	gap  int
}

func (h *heldIter) take() (uint64, bool) {
	for h.next <= h.st.HighSeq && h.next != 0 {
		for h.gap < len(h.st.Gaps) && h.st.Gaps[h.gap].To < h.next {
			h.gap++
		}
		if h.gap < len(h.st.Gaps) && h.st.Gaps[h.gap].From <= h.next {
			h.next = h.st.Gaps[h.gap].To + 1
			continue
		}
		seq := h.next
		h.next++
		return seq, true
	}
	return 0, false
}
