package repository

import (
	"encoding/binary"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// A source's messages on the restoring side: read from the stream, checked
// against their CRC32C and cut into inline runs, while the file commits the
// previous batch.

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
