package repository

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"

	"umstore/internal/boltfile"
)

// Snapshot is a consistent point-in-time view of the repository, held open
// as a bbolt read transaction. Taking one is cheap; Apply goes on while it is
// written out. Release it as soon as it is written: while it is held, pages
// it references cannot be reused (the file grows), and a write that has to
// grow the memory map waits for it.
type Snapshot struct {
	repo  *Repo // its guard: a fault while writing the file out stops the repository
	tx    *bolt.Tx
	index uint64
	term  uint64
	size  int64  // of the stream
	pin   uint64 // keeps the log entries it refers to (LowestLogRef)

	mu       sync.Mutex
	released bool
	intact   IntactCopy // UseCopies
}

// Snapshot captures the current state. It may be called from any goroutine:
// a batch is committed together with its applied index, so the view always
// sits between two batches, and Index says which.
func (r *Repo) Snapshot() (*Snapshot, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return nil, ErrClosed
	}
	var snap *Snapshot
	err := r.guard("snapshot the repository", func() error {
		// The view and its pin are taken together, so that no compaction
		// can delete an entry the view refers to in between (LowestLogRef).
		r.refMu.Lock()
		tx, err := r.db.Begin(false)
		var low uint64
		if err == nil {
			low = lowestLogRef(tx.Bucket(bucketMeta))
		}
		r.refMu.Unlock()
		if err != nil {
			return err
		}
		pin := r.pin(low)
		taken := false
		defer func() {
			if !taken {
				r.unpin(pin)
				_ = tx.Rollback() // also after a fault: Close waits for open transactions
			}
		}()
		index, term := readApplied(tx.Bucket(bucketMeta))
		size, err := logicalSize(tx)
		if err != nil {
			return err
		}
		snap = &Snapshot{repo: r, tx: tx, index: index, term: term, size: size, pin: pin}
		taken = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", r.path, err)
	}
	return snap, nil
}

// Index returns the applied raft index of the captured state.
func (s *Snapshot) Index() uint64 { return s.index }

// Term returns the raft term of the entry at Index.
func (s *Snapshot) Term() uint64 { return s.term }

// Size returns how many bytes WriteTo writes.
func (s *Snapshot) Size() int64 { return s.size }

// WriteTo streams the snapshot to w: the repository's whole content, every
// message inline with its CRC32C (read from the raft log for log runs, and
// checked), framed so that Restore can refuse a truncated or damaged stream
// (snapstream.go). It is safe while Apply continues. A message that fails
// its check fails the stream (an error wrapping ErrCorrupt): nothing
// damaged is sent.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return 0, fmt.Errorf("write snapshot at index %d: already released", s.index)
	}
	var n int64
	err := s.repo.guard("write a snapshot of the repository", func() error {
		cw := &countWriter{w: w}
		lw := &logicalWriter{w: cw, log: s.repo.entries, intact: s.intact}
		err := lw.write(s.tx, s.index, s.term)
		n = cw.n
		if err == nil && n != s.size {
			err = fmt.Errorf("wrote %d bytes of a %d-byte snapshot", n, s.size)
		}
		return err
	})
	if err != nil {
		return n, fmt.Errorf("write snapshot at index %d: %w", s.index, err)
	}
	return n, nil
}

// UseCopies makes WriteTo send, in place of a message damaged in this
// repository's files, the intact copy fn gives (checked against the
// message's CRC32C), instead of failing: a leader whose own copy of one
// message is damaged can still bring a member up to date.
func (s *Snapshot) UseCopies(fn IntactCopy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intact = fn
}

// Release ends the snapshot's read transaction. It is safe to call more
// than once.
func (s *Snapshot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		s.released = true
		_ = s.tx.Rollback()
		s.repo.unpin(s.pin)
	}
}

// The snapshot stream of earlier versions, still restored (a leader
// running an older umstored sends it), no longer written (all integers
// big-endian):
//
//	magic "UMSNAP01" | file size uint64 | applied index uint64 | applied term uint64
//	the bbolt file (file size bytes)
//	SHA-256 of everything before it
const (
	streamMagic     = "UMSNAP01"
	streamHeaderLen = 32
)

// writeStream frames a file of size bytes written by body.
func writeStream(w io.Writer, index, term uint64, size int64, body func(io.Writer) (int64, error)) (int64, error) {
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	var hdr [streamHeaderLen]byte
	copy(hdr[:8], streamMagic)
	binary.BigEndian.PutUint64(hdr[8:], uint64(size))
	binary.BigEndian.PutUint64(hdr[16:], index)
	binary.BigEndian.PutUint64(hdr[24:], term)
	if _, err := cw.Write(hdr[:]); err != nil {
		return cw.n, err
	}
	if n, err := body(cw); err != nil {
		return cw.n, err
	} else if n != size {
		return cw.n, fmt.Errorf("wrote %d bytes of a %d-byte file", n, size)
	}
	n, err := w.Write(h.Sum(nil))
	return cw.n + int64(n), err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Restore replaces the whole repository with the snapshot read from rd (as
// written by Snapshot.WriteTo). The file it carries is staged beside the
// current one, synced, and checked (length, checksum, then as a complete
// repository of a known format) before the current file is touched. A
// refused stream leaves the current state as it was: ErrFormat for a stream
// that is not a sound snapshot, ErrGroupMismatch for a snapshot of another
// group (a repository with a group identity only ever takes snapshots of that
// group). Then the current file is closed, the new one renamed over it, the
// directory synced, and the file reopened.
//
// Restore must not run concurrently with Apply or Snapshot, and waits for
// unreleased snapshots. Reads wait while the file is swapped. If the
// repository cannot be reopened, it is left closed (ErrClosed) and the error
// says why.
func (r *Repo) Restore(rd io.Reader) error {
	if err := r.Fault(); err != nil {
		return err // a repository that faulted is not used again, not even replaced
	}
	var tmp string
	var magic [8]byte
	_, err := io.ReadFull(rd, magic[:])
	switch {
	case err != nil:
		err = fmt.Errorf("%w: snapshot stream too short for its header: %v", ErrFormat, err)
	case string(magic[:]) == stagedMagic:
		var rest []byte
		if rest, err = io.ReadAll(io.LimitReader(rd, 4096)); err == nil {
			tmp, err = r.installable(append(magic[:], rest...))
		}
	case string(magic[:]) == streamMagic2:
		var group string
		tmp, group, _, err = r.buildFromStream(rd)
		if err == nil {
			if cur := r.GroupID(); cur != "" && group != cur {
				os.Remove(tmp)
				err = fmt.Errorf("%w: the snapshot holds group %q, this repository group %q; check the deployment's addresses (is a store of another group reachable at a member's address?)", ErrGroupMismatch, group, cur)
			}
		}
	default:
		tmp, err = r.stage(io.MultiReader(bytes.NewReader(magic[:]), rd))
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", r.path, err)
	}
	defer os.Remove(tmp) // no-op once renamed

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return ErrClosed
	}
	r.wmu.Lock()
	r.rollbackLocked() // batches not committed yet: the snapshot replaces them
	r.wmu.Unlock()
	if err := r.db.Close(); err != nil {
		r.db = nil
		return fmt.Errorf("restore %s: close current file: %w", r.path, err)
	}
	r.db = nil
	swapErr := os.Rename(tmp, r.path)
	if swapErr == nil {
		swapErr = syncDir(filepath.Dir(r.path))
	}
	// Reopen whatever is now at the path: the restored file, or the old one
	// if the rename failed.
	db, err := openDB(r.path, r.opts, false)
	if err != nil {
		return fmt.Errorf("restore %s: reopen: %w", r.path, errors.Join(swapErr, err))
	}
	r.db = db
	r.entries.forget()
	if err := r.load(); err != nil {
		return fmt.Errorf("restore %s: %w", r.path, err)
	}
	if swapErr != nil {
		return fmt.Errorf("restore %s: install restored file (current state kept): %w", r.path, swapErr)
	}
	return nil
}

// stage checks the stream read from rd and writes the file it carries to a
// temporary file beside the repository, synced and validated. It returns the
// temporary file's path.
func (r *Repo) stage(rd io.Reader) (string, error) {
	h := sha256.New()
	in := io.TeeReader(rd, h)
	var hdr [streamHeaderLen]byte
	if _, err := io.ReadFull(in, hdr[:]); err != nil {
		return "", fmt.Errorf("%w: snapshot stream too short for its header: %v", ErrFormat, err)
	}
	if string(hdr[:8]) != streamMagic {
		return "", fmt.Errorf("%w: not a umstore snapshot stream (magic %q, want %q)", ErrFormat, hdr[:8], streamMagic)
	}
	size := binary.BigEndian.Uint64(hdr[8:])
	if size == 0 || size > 1<<50 {
		return "", fmt.Errorf("%w: snapshot announces an implausible file size %d", ErrFormat, size)
	}

	dir, base := filepath.Split(r.path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+restoreTempInfix+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if n, err := io.CopyN(f, in, int64(size)); err == io.EOF {
		return fail(fmt.Errorf("%w: snapshot truncated after %d of %d bytes", ErrFormat, n, size))
	} else if err != nil {
		return fail(fmt.Errorf("receive snapshot: %w", err))
	}
	sum := h.Sum(nil)
	var trailer [sha256.Size]byte
	if _, err := io.ReadFull(rd, trailer[:]); err != nil {
		return fail(fmt.Errorf("%w: snapshot checksum missing: %v", ErrFormat, err))
	}
	if !bytes.Equal(sum, trailer[:]) {
		return fail(fmt.Errorf("%w: snapshot checksum mismatch: the stream was damaged in transit or storage", ErrFormat))
	}
	if n, _ := rd.Read(trailer[:1]); n != 0 {
		return fail(fmt.Errorf("%w: unexpected data after the snapshot", ErrFormat))
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	group, err := validateFile(tmp, r.opts)
	if err == nil {
		if cur := r.GroupID(); cur != "" && group != cur {
			err = fmt.Errorf("%w: the snapshot holds group %q, this repository group %q; check the deployment's addresses (is a store of another group reachable at a member's address?)", ErrGroupMismatch, group, cur)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// validateFile opens path read-only and checks that it is a complete
// repository of a known format, walking every page. It returns the group
// identity the file holds.
func validateFile(path string, opts Options) (group string, err error) {
	db, err := openDB(path, opts, true)
	if err != nil {
		return "", err
	}
	defer db.Close()
	check := func(tx *bolt.Tx) error {
		group = readGroup(tx.Bucket(bucketMeta)).id
		var first error
		for err := range tx.Check() { // drain: the checker stops only when done
			if first == nil {
				first = fmt.Errorf("%w: snapshot file is damaged: %v", ErrFormat, err)
			}
		}
		return first
	}
	err = boltfile.Guard(path, "check a received snapshot", func() error { return db.View(check) })
	if errors.Is(err, boltfile.ErrDamaged) {
		err = fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return group, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
