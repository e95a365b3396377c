package storegroup

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	berrors "go.etcd.io/bbolt/errors"

	"umstore/dirlock"
	"umstore/internal/boltfile"
	"umstore/repository"
	"umstore/storegroup/stagetime"
)

// guardedLogStore is raft's log and stable store, checking the data
// directory's lock before every write: a store whose lease was taken over
// (a paused process resuming after a standby took its place) must not write
// another byte.
//
// A write that fails (disk full, I/O error) stops the store through
// onWriteError: raft would otherwise keep a follower running that can never
// append again, silently behind its group.
//
// raft.db (and raft-wal's wal-meta.db) is mapped into memory by bbolt:
// every call runs under the file's guard (boltfile.Guarded), so that a
// fault reading it (a file cut short under the store) becomes an error, the
// store's fatal one, and not the end of the process. After a fault nothing
// reads or writes the file again.
// The store's own code (status, start-up checks) calls these methods and
// gets errors; raft gets them through raftLogStore.
type guardedLogStore struct {
	log          rawLogStore // raft-boltdb or raft-wal (logstore_kind.go)
	file         *boltfile.Guarded
	lock         dirlock.Lock
	onWriteError func(error)
	// onUnreadable hears of an entry raft needs that cannot be read: it
	// stops the store, the file marked damaged.
	onUnreadable func(error)
	// retained, if set, is the repository's LowestLogRef: compaction never
	// deletes that entry or a later one.
	retained func() (uint64, bool)
	applied  func() uint64    // the repository's applied index, with retained
	stages   *stagetime.Timer // times each write (stagetime.LogWrite); nil times nothing

	// written counts the entries and bytes stored, for the log compactor
	// (compactor.go).
	written logWritten
}

func (g *guardedLogStore) failed(err error) error {
	if err != nil && g.onWriteError != nil && g.file.Err() == nil {
		g.onWriteError(err)
	}
	return err
}

func (g *guardedLogStore) check(what string) error {
	if err := g.lock.Check(); err != nil {
		return fmt.Errorf("refusing to %s: %w", what, err)
	}
	return nil
}

// write runs a write of the log under the lock check and the guard.
func (g *guardedLogStore) write(what string, fn func() error) error {
	if err := g.check(what); err != nil {
		return err
	}
	return g.failed(g.file.Run(what, fn))
}

// rawLogStore is what both log stores are: raft's log and stable store,
// closed with the store.
type rawLogStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// Close closes the log store's files.
func (g *guardedLogStore) Close() error { return g.log.Close() }

// FirstIndex implements raft.LogStore.
func (g *guardedLogStore) FirstIndex() (index uint64, err error) {
	err = g.file.Run("read the raft log's first index", func() (err error) {
		index, err = g.log.FirstIndex()
		return err
	})
	return index, err
}

// LastIndex implements raft.LogStore.
func (g *guardedLogStore) LastIndex() (index uint64, err error) {
	err = g.file.Run("read the raft log's last index", func() (err error) {
		index, err = g.log.LastIndex()
		return err
	})
	return index, err
}

// GetLog implements raft.LogStore.
func (g *guardedLogStore) GetLog(index uint64, l *raft.Log) error {
	return g.file.Run("read a raft log entry", func() error { return g.log.GetLog(index, l) })
}

// StoreLog implements raft.LogStore.
func (g *guardedLogStore) StoreLog(l *raft.Log) error {
	defer g.stages.Since(stagetime.LogWrite, time.Now())
	err := g.write("write the raft log", func() error { return g.log.StoreLog(l) })
	if err == nil {
		g.written.add(l)
	}
	return err
}

// StoreLogs implements raft.LogStore.
func (g *guardedLogStore) StoreLogs(logs []*raft.Log) error {
	defer g.stages.Since(stagetime.LogWrite, time.Now())
	err := g.write("write the raft log", func() error { return g.log.StoreLogs(logs) })
	if err == nil {
		for _, l := range logs {
			g.written.add(l)
		}
	}
	return err
}

// DeleteRange implements raft.LogStore. When the repository indexes the
// log (retained), compaction from the head stops before the oldest entry a
// retained message (or a snapshot being streamed) refers to: retention, not
// raft's snapshot settings, decides how much log stays. Deleting a suffix
// (raft cutting a follower's uncommitted entries) never touches one, as
// only committed entries are applied and referred to; a suffix that would
// is refused, and the store stops rather than lose messages it holds.
func (g *guardedLogStore) DeleteRange(min, max uint64) error {
	if g.retained != nil {
		first, err := g.FirstIndex()
		if err != nil {
			return err
		}
		low, ok := g.retained()
		switch {
		case min > first && g.applied != nil && min <= g.applied():
			return g.failed(fmt.Errorf("refusing to delete raft log entries %d..%d: entries up to %d are applied, and the repository may refer to them", min, max, g.applied()))
		case min <= first && ok && max >= low:
			if low <= min {
				return nil // everything asked for is still referred to
			}
			max = low - 1
		}
	}
	return g.write("compact the raft log", func() error { return g.log.DeleteRange(min, max) })
}

// ReadEntry implements repository.LogReader: the command data of a
// committed entry. A missing entry, or one whose bytes raft cannot decode,
// is damage (repository.ErrCorrupt); a closed or faulted log is returned as
// it is.
func (g *guardedLogStore) ReadEntry(index uint64) ([]byte, error) {
	var l raft.Log
	err := g.GetLog(index, &l)
	switch {
	case err == nil && l.Type != raft.LogCommand:
		return nil, fmt.Errorf("%w: raft log entry %d is not a command", repository.ErrCorrupt, index)
	case err == nil:
		return l.Data, nil
	case errors.Is(err, raft.ErrLogNotFound):
		return nil, fmt.Errorf("%w: raft log entry %d is not in the log", repository.ErrCorrupt, index)
	case g.file.Err() != nil, errors.Is(err, wal.ErrClosed), errors.Is(err, berrors.ErrDatabaseNotOpen):
		return nil, err
	}
	return nil, fmt.Errorf("%w: raft log entry %d cannot be read: %v", repository.ErrCorrupt, index, err)
}

// Set implements raft.StableStore.
func (g *guardedLogStore) Set(k, v []byte) error {
	return g.write("write raft's stable state", func() error { return g.log.Set(k, v) })
}

// Get implements raft.StableStore.
func (g *guardedLogStore) Get(k []byte) (v []byte, err error) {
	err = g.file.Run("read raft's stable state", func() (err error) {
		v, err = g.log.Get(k)
		return err
	})
	return v, err
}

// SetUint64 implements raft.StableStore.
func (g *guardedLogStore) SetUint64(k []byte, v uint64) error {
	return g.write("write raft's stable state", func() error { return g.log.SetUint64(k, v) })
}

// GetUint64 implements raft.StableStore.
func (g *guardedLogStore) GetUint64(k []byte) (v uint64, err error) {
	err = g.file.Run("read raft's stable state", func() (err error) {
		v, err = g.log.GetUint64(k)
		return err
	})
	return v, err
}

// raftLogStore is the log store as raft sees it. Raft calls it from its own
// goroutines (the main loop, replication, snapshots, the transport's
// heartbeat handler), and on some errors raft panics there, out of reach of
// any recover, ending the process and every store in it: a log entry it
// cannot read while applying ("log not found"), a term it cannot save. So
// once the file has faulted, or when saving a term failed, the calling
// goroutine does not return to raft: it ends (runtime.Goexit, which runs
// raft's deferred calls, so that raft still shuts down), and the store,
// already told through its fatal-error path, stops.
type raftLogStore struct{ g *guardedLogStore }

var (
	_ raft.LogStore          = raftLogStore{}
	_ raft.StableStore       = raftLogStore{}
	_ raft.MonotonicLogStore = raftLogStore{}
)

// IsMonotonic tells raft whether the log store refuses gaps (raft-wal
// does): raft then empties the log after installing a snapshot, instead of
// appending after a gap that raft-wal would refuse.
func (r raftLogStore) IsMonotonic() bool {
	m, ok := r.g.log.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// leave ends the calling goroutine instead of returning err to raft, if
// the file faulted.
func (r raftLogStore) leave(err error) error {
	if err != nil && r.g.file.Err() != nil {
		runtime.Goexit()
	}
	return err
}

func (r raftLogStore) FirstIndex() (uint64, error) {
	i, err := r.g.FirstIndex()
	return i, r.leave(err)
}

func (r raftLogStore) LastIndex() (uint64, error) {
	i, err := r.g.LastIndex()
	return i, r.leave(err)
}

// GetLog reads an entry. Raft panics when an entry it applies cannot be
// read; an entry that is there but cannot be read (its bytes do not decode)
// is damage: the store stops, its files marked, and the goroutine ends. A
// missing entry is returned: raft asks for compacted ones while replicating,
// and sends a snapshot instead.
func (r raftLogStore) GetLog(index uint64, l *raft.Log) error {
	err := r.leave(r.g.GetLog(index, l))
	if err != nil && !errors.Is(err, raft.ErrLogNotFound) && !errors.Is(err, berrors.ErrDatabaseNotOpen) && !errors.Is(err, wal.ErrClosed) {
		if r.g.onUnreadable != nil {
			r.g.onUnreadable(fmt.Errorf("raft log entry %d in %s cannot be read: %w", index, r.g.file.Path, err))
		}
		runtime.Goexit()
	}
	return err
}

func (r raftLogStore) StoreLog(l *raft.Log) error       { return r.leave(r.g.StoreLog(l)) }
func (r raftLogStore) StoreLogs(logs []*raft.Log) error { return r.leave(r.g.StoreLogs(logs)) }
func (r raftLogStore) DeleteRange(min, max uint64) error {
	return r.leave(r.g.DeleteRange(min, max))
}
func (r raftLogStore) Set(k, v []byte) error { return r.leave(r.g.Set(k, v)) }

func (r raftLogStore) Get(k []byte) ([]byte, error) {
	v, err := r.g.Get(k)
	return v, r.leave(err)
}

// SetUint64 saves the current term and the vote's term. Raft panics when
// saving the term fails; the failed write has already stopped the store
// (onWriteError, or the lost lease), so the goroutine ends instead of
// returning.
func (r raftLogStore) SetUint64(k []byte, v uint64) error {
	if err := r.g.SetUint64(k, v); err != nil {
		runtime.Goexit()
	}
	return nil
}

func (r raftLogStore) GetUint64(k []byte) (uint64, error) {
	v, err := r.g.GetUint64(k)
	return v, r.leave(err)
}
