package repository

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Message is one stored message. Payload is a copy: it stays valid after the
// read transaction that found it.
type Message struct {
	Seq     uint64
	Payload []byte
	// CRC is the payload's CRC32C (Castagnoli) as stored, 0 if the
	// repository has none for it.
	CRC uint32
}

// Sources describes every source's repository, sorted by name.
func (r *Repo) Sources() ([]SourceInfo, error) {
	out, _, err := r.SourcesPage("", 0, 0)
	return out, err
}

// SourcesPage lists, in name order, the sources named after after: at
// most limit of them and, once they add up to maxBytes of names, gaps and
// declared ranges, no more (0 bounds neither). next is the name of the last
// one listed when more follow, "" when the list is complete: an answer to
// a client holds one page, so that no number of sources makes a frame too
// large to send or costs the leader more than a page per request.
func (r *Repo) SourcesPage(after string, limit, maxBytes int) (out []SourceInfo, next string, err error) {
	err = r.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSources).Cursor()
		k, v := c.First()
		if after != "" {
			k, v = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		size := 0
		for ; k != nil; k, v = c.Next() {
			if v != nil {
				continue // not a source bucket
			}
			if (limit > 0 && len(out) >= limit) || (maxBytes > 0 && size >= maxBytes) {
				next = out[len(out)-1].Name
				return nil
			}
			st, err := loadState(tx, string(k))
			if err != nil {
				return err
			}
			in := st.info(string(k))
			out = append(out, in)
			size += len(in.Name) + 16*(len(in.Gaps)+len(in.Unpublished)) + 32
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list sources of %s: %w", r.path, err)
	}
	return out, next, nil
}

// Source describes one source's repository; ok is false if the group has
// never seen the source.
func (r *Repo) Source(name string) (info SourceInfo, ok bool, err error) {
	err = r.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSources).Bucket([]byte(name)) == nil {
			return nil
		}
		st, err := loadState(tx, name)
		if err != nil {
			return err
		}
		info, ok = st.info(name), true
		return nil
	})
	if err != nil {
		return SourceInfo{}, false, fmt.Errorf("read source %q: %w", name, err)
	}
	return info, ok, nil
}

func loadState(tx *bolt.Tx, name string) (sourceState, error) {
	b := tx.Bucket(bucketSources).Bucket([]byte(name))
	if b == nil {
		return sourceState{}, fmt.Errorf("%w %q", ErrUnknownSource, name)
	}
	st, err := decodeState(b.Get(keyState))
	if err != nil {
		return sourceState{}, fmt.Errorf("source %q: %w", name, err)
	}
	return st, nil
}

// Read returns the messages held of source with sequence numbers in
// [from, to], ascending, each with its CRC32C (0 for a message stored
// before checksums existed). Missing sequence numbers (gaps, and those
// released by retention: at or below TrimmedThrough) are simply absent. It
// stops after maxCount messages, and before a message that would take the
// payload total above maxBytes; the first message found is returned
// whatever its size, so a reader always makes progress. A limit ≤ 0 means
// no limit. An unknown source gives an error wrapping ErrUnknownSource.
//
// Every message is checked against its CRC before it is returned (and read
// from the raft log first when the repository indexes it): a damaged one
// is never returned. Read then returns the messages before it and a
// *CorruptError naming it (wrapping ErrCorrupt), and counts it
// (CorruptCount): the caller treats it as missing.
func (r *Repo) Read(source string, from, to uint64, maxCount, maxBytes int) ([]Message, error) {
	var out []Message
	var corrupt *CorruptError
	err := r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return fmt.Errorf("%w %q: register the source first", ErrUnknownSource, source)
		}
		msgs := b.Bucket(bucketMsgs)
		if msgs == nil {
			return fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, source)
		}
		total := 0
		mc := newMsgCursor(msgs)
		mc.log = r.entries
		seq, p, ok, err := mc.seek(from)
		for ; ok; seq, p, ok, err = mc.next() {
			if seq > to {
				break
			}
			if maxCount > 0 && len(out) >= maxCount {
				break
			}
			if maxBytes > 0 && len(out) > 0 && total+len(p) > maxBytes {
				break
			}
			total += len(p)
			sum, _ := mc.crc()
			out = append(out, Message{Seq: seq, Payload: append([]byte(nil), p...), CRC: sum}) // out of the transaction's memory
		}
		var bad *corruptAt
		if errors.As(err, &bad) {
			if bad.seq <= to && (maxCount <= 0 || len(out) < maxCount) {
				corrupt = &CorruptError{Source: source, Seq: bad.seq, cause: bad.err}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("source %q: %w", source, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %q [%d,%d]: %w", source, from, to, err)
	}
	if corrupt != nil {
		r.corrupt.Add(1)
		r.markDamaged(source, corrupt.Seq)
		return out, corrupt
	}
	return out, nil
}

// CorruptCount returns how many damaged messages Read has found (and not
// returned) since the repository was opened.
func (r *Repo) CorruptCount() uint64 { return r.corrupt.Load() }
