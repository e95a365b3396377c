package repository

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Restoring from the stream: a new repository file is built beside the
// current one, record by record, and synced once; Restore swaps it in, or
// Stage keeps it for a later Restore (staged.go).

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
		case 'l':
			err = b.levelRecord(body)
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
