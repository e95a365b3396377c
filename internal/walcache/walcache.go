// Package walcache is the file system raft-wal writes the raft log through:
// the operating system's, except that a segment file keeps only its latest
// bytes in the page cache.
//
// A raft log is written once and read back rarely: replication reads the
// newest entries (raft keeps those in memory), and readers of older
// messages are catching up from far behind. Left alone, the kernel caches
// every byte written until memory runs short, so each write lands in a page
// never used before. On the two-core virtual machine this project is
// measured on, such a page costs about nine times the copy itself (3.1 ns of
// CPU per byte written against 0.35 ns when pages are reused: BENCH.md),
// and in a long run of 1 KiB messages that copy was 40% of umstored's
// CPU. So once a batch is synced, the pages more than Keep bytes behind
// the end of the file are dropped from the cache (posix_fadvise DONTNEED: only clean
// pages, never data not yet on disk), and the next writes reuse them. A
// sealed segment read from start to end (a snapshot stream, a member
// catching up) drops what it has read the same way, or the kernel's
// read-ahead fills fresh pages instead. On systems without posix_fadvise it
// is the plain file system.
package walcache

import (
	"sync"
	"syscall"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// DefaultKeep is how many of a segment's latest bytes stay cached: what a
// follower or reader slightly behind reads back, several times the largest
// append batch.
const DefaultKeep = 32 << 20

// dropStep is the least a drop covers, so a small batch does not cost a
// system call of its own.
const dropStep = 4 << 20

// FS is raft-wal's VFS over the operating system's files, dropping the
// written pages of each segment more than Keep bytes behind its end.
type FS struct {
	*fs.FS
	Keep int64 // bytes of a segment's end kept cached; DefaultKeep when 0
}

var _ types.VFS = (*FS)(nil)

// New returns the file system with the default window.
func New() *FS { return &FS{FS: fs.New()} }

// Create creates a segment file as raft-wal's own file system does.
func (f *FS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return f.wrap(w), nil
}

// OpenWriter opens the tail segment for appending (at raft-wal's open).
func (f *FS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return f.wrap(w), nil
}

// OpenReader opens a sealed segment for reading. A read that continues
// where the previous one ended (a member catching up through the log, a
// snapshot stream) drops what it has read more than readKeep bytes behind,
// so the kernel's read-ahead reuses those pages too.
func (f *FS) OpenReader(dir, name string) (types.ReadableFile, error) {
	r, err := f.FS.OpenReader(dir, name)
	if err != nil {
		return nil, err
	}
	raw, ok := rawConn(r)
	if !ok {
		return r, nil
	}
	return &reader{ReadableFile: r, raw: raw}, nil
}

// rawConn is f's descriptor for posix_fadvise, if it has one.
func rawConn(f any) (syscall.RawConn, bool) {
	c, ok := f.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := c.SyscallConn()
	return raw, err == nil
}

func (f *FS) wrap(w types.WritableFile) types.WritableFile {
	keep := f.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	raw, ok := rawConn(w)
	if !ok {
		return w
	}
	return &file{WritableFile: w, raw: raw, keep: keep}
}

// file is a segment being written. raft-wal writes and syncs a segment
// from one goroutine (its appender, under its write lock), so the offsets
// need no lock of their own.
type file struct {
	types.WritableFile
	raw     syscall.RawConn
	keep    int64
	end     int64 // the furthest byte written
	dropped int64 // pages before this offset were dropped
}

// WriteAt writes as the file does and notes how far the file is written.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	if e := off + int64(n); e > f.end {
		f.end = e
	}
	return n, err
}

// Sync makes the file durable, then drops what is now on disk and more
// than keep bytes behind the end.
func (f *file) Sync() error {
	if err := f.WritableFile.Sync(); err != nil {
		return err
	}
	upto := (f.end - f.keep) &^ (pageSize - 1)
	if upto-f.dropped >= dropStep {
		f.drop(f.dropped, upto)
	}
	return nil
}

// Close drops every cached page of the file, read back since or not, and
// closes it: raft-wal closes a segment's writer only after its last sync,
// when it seals the segment or shuts down.
func (f *file) Close() error {
	f.drop(0, f.end)
	return f.WritableFile.Close()
}

// drop asks the kernel to forget the cached pages of [from, to). It is
// advice: an error leaves the pages cached and changes nothing else.
func (f *file) drop(from, to int64) {
	if to <= from {
		return
	}
	f.raw.Control(func(fd uintptr) { dropPages(fd, from, to-from) })
	f.dropped = to
}

const pageSize = 4096

// readKeep is how far behind a sequential reader its pages are kept, and
// seqSlack how far past the previous read's end a read may start and still
// continue it (raft-wal reads a frame's header, then its body).
const (
	readKeep = 8 << 20
	seqSlack = 64 << 10
)

// reader is a sealed segment, read by any number of goroutines at once.
// Only a single sequential stream drops pages: two readers at different
// places interleave their reads, which then never continue one another.
type reader struct {
	types.ReadableFile
	raw syscall.RawConn

	mu      sync.Mutex
	next    int64 // where the last read ended
	dropped int64 // pages before this offset were dropped
}

// ReadAt reads as the file does, then drops what a sequential stream left
// more than readKeep behind.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.ReadableFile.ReadAt(p, off)
	end := off + int64(n)
	r.mu.Lock()
	sequential := off >= r.next-pageSize && off <= r.next+seqSlack
	r.next = end
	from, upto := r.dropped, (end-readKeep)&^(pageSize-1)
	drop := sequential && upto-from >= dropStep
	if drop {
		r.dropped = upto
	}
	r.mu.Unlock()
	if drop {
		r.raw.Control(func(fd uintptr) { dropPages(fd, from, upto-from) })
	}
	return n, err
}
