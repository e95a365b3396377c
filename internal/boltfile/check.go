package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
)

// ErrDamaged is wrapped by the errors of Check and by memory faults Guard
// recovers: the file cannot be used as it is. Nothing was changed; move it
// aside (a store does that itself: its data directory goes to a numbered
// backup and the store rejoins its group empty).
var ErrDamaged = errors.New("damaged database file")

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common, format version
// 2): pages 0 and 1 are meta pages, each a 16-byte page header followed by
// the meta; the checksum is FNV-64a over the meta up to the checksum itself.
// Integers are in the machine's byte order.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2

	pageHeaderLen = 16
	metaLen       = 64 // magic .. checksum
	checksumAt    = 56 // offset of the checksum inside the meta

	noFreelist = ^uint64(0)

	minPageSize = 512
	maxPageSize = 1 << 24 // bbolt looks for the second meta page up to 16 MiB
)

// meta is the part of a bbolt meta page Check uses.
type meta struct {
	pageSize uint32
	root     uint64 // page of the root bucket
	freelist uint64 // page of the freelist, or noFreelist
	pgid     uint64 // high-water mark: pages [0, pgid) are in use
	txid     uint64
}

// Check reports whether the bbolt file at path can be opened without
// reading past its end: a missing or empty file (bbolt creates and
// initialises it) passes. It returns an error wrapping ErrDamaged, naming
// the file and what is wrong, for a file too short for its meta pages, with
// no valid meta page, or shorter than the valid meta's page count; and
// other errors (permissions, I/O) as they are.
func Check(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	m, err := latestMeta(f, size)
	if err != nil {
		return damaged(path, "%v", err)
	}
	ps := int64(m.pageSize)
	if size < 2*ps {
		return damaged(path, "it is %d bytes, less than its two meta pages of %d bytes", size, ps)
	}
	if m.pgid < 2 || m.root < 2 || m.root >= m.pgid || (m.freelist != noFreelist && m.freelist >= m.pgid) {
		return damaged(path, "its meta page (transaction %d) is inconsistent: root page %d, freelist page %d, %d pages in use", m.txid, m.root, m.freelist, m.pgid)
	}
	if m.pgid > uint64(size/ps) {
		return damaged(path, "it is %d bytes, but its meta page (transaction %d) says it holds %d pages of %d bytes (%d bytes): it was cut short", size, m.txid, m.pgid, ps, int64(m.pgid)*ps)
	}
	return nil
}

func damaged(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrDamaged, path, fmt.Sprintf(format, args...))
}

// latestMeta returns the meta bbolt would use: the valid one with the
// higher transaction id. Like bbolt, it takes the page size from the first
// meta page if that is valid, and otherwise looks for the second meta page
// at every page size bbolt supports.
func latestMeta(r io.ReaderAt, size int64) (meta, error) {
	first, err0 := readMeta(r, 0)
	var candidates []int64
	if err0 == nil {
		candidates = []int64{int64(first.pageSize)}
	} else {
		for ps := int64(1024); ps <= maxPageSize; ps <<= 1 {
			candidates = append(candidates, ps)
		}
	}
	var second meta
	err1 := errors.New("no second meta page found")
	for _, at := range candidates {
		if at+pageHeaderLen+metaLen > size {
			break
		}
		m, err := readMeta(r, at)
		if err == nil && int64(m.pageSize) == at {
			second, err1 = m, nil
			break
		}
		if err0 == nil {
			err1 = fmt.Errorf("second meta page at %d: %w", at, err)
		}
	}
	switch {
	case err0 != nil && err1 != nil:
		return meta{}, fmt.Errorf("no valid meta page: first: %v; second: %v", err0, err1)
	case err0 != nil:
		return second, nil
	case err1 != nil:
		return first, nil
	case second.txid > first.txid:
		return second, nil
	default:
		return first, nil
	}
}

// readMeta reads and validates the meta page that starts at offset.
func readMeta(r io.ReaderAt, offset int64) (meta, error) {
	var b [pageHeaderLen + metaLen]byte
	if n, err := r.ReadAt(b[:], offset); n < len(b) {
		return meta{}, fmt.Errorf("read at %d: %v", offset, err)
	}
	p := b[pageHeaderLen:]
	ne := binary.NativeEndian
	if magic := ne.Uint32(p[0:]); magic != boltMagic {
		return meta{}, fmt.Errorf("not a bbolt meta page (magic %#x)", magic)
	}
	if v := ne.Uint32(p[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("bbolt format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(p[:checksumAt])
	if sum := ne.Uint64(p[checksumAt:]); sum != h.Sum64() {
		return meta{}, errors.New("meta page checksum mismatch")
	}
	m := meta{
		pageSize: ne.Uint32(p[8:]),
		root:     ne.Uint64(p[16:]),
		freelist: ne.Uint64(p[32:]),
		pgid:     ne.Uint64(p[40:]),
		txid:     ne.Uint64(p[48:]),
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize {
		return meta{}, fmt.Errorf("implausible page size %d", m.pageSize)
	}
	return m, nil
}
