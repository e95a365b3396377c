package storegroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/segment"

	"umstore/internal/boltfile"
	"umstore/internal/walcache"
	"umstore/internal/walmeta"
)

// Two raft log stores can hold a store's log:
//
//   - LogStoreWAL, hashicorp/raft-wal: segment files under wal/, one write
//     and one fsync per append batch, a CRC32C per batch (a torn tail is
//     found and cut when the log opens), its stable state (term, vote) in
//     wal/wal-meta.db (a small bbolt file). The default for new stores: it
//     writes about half the bytes raft-boltdb writes per payload byte
//     (BENCH.md), and it is the log the repository can index (a payload
//     then written once per store).
//   - LogStoreBoltDB, hashicorp/raft-boltdb: raft.db, a bbolt file holding
//     both the log and the stable state. The design card's choice, kept for
//     every store that has one and selectable for new ones.
//
// A data directory says which it uses: raft.db or wal/. A store that has
// one keeps it whatever --log-store says (it never starts on an empty log
// beside its real one); only a store without either takes the setting.
// Moving an existing store to the other kind is a rejoin: stop it, move its
// data directory aside, start it with the new setting; it joins its group
// empty (staged, behind the vote gate) and catches up from the others.
const (
	LogStoreWAL    = "wal"
	LogStoreBoltDB = "boltdb"
)

// Names of the log stores' files in a data directory.
const (
	raftDBFile = "raft.db"
	walDir     = "wal"
)

// errLogDamaged: raft-wal refused its files (a segment's CRC or header that
// does not match, a segment missing, a value of its meta file that does not
// match its checksum).
var errLogDamaged = errors.New("the raft log's files are damaged")

// CheckLogStore refuses a log-store setting that is neither "wal" nor
// "boltdb" ("" means the default, wal). Its error names the flag.
func CheckLogStore(kind string) error {
	switch kind {
	case "", LogStoreWAL, LogStoreBoltDB:
		return nil
	}
	return fmt.Errorf("--log-store %q: want %q (segment files, the default for new stores) or %q (raft.db)", kind, LogStoreWAL, LogStoreBoltDB)
}

// existingLogStore says which log store dir already holds, "" if none
// (raft.db first, should it hold both).
func existingLogStore(dir string) string {
	bolt, wal := hasLogStores(dir)
	switch {
	case bolt:
		return LogStoreBoltDB
	case wal:
		return LogStoreWAL
	}
	return ""
}

func hasLogStores(dir string) (bolt, wal bool) {
	if st, err := os.Stat(filepath.Join(dir, raftDBFile)); err == nil && st.Size() > 0 {
		bolt = true
	}
	if entries, err := os.ReadDir(filepath.Join(dir, walDir)); err == nil && len(entries) > 0 {
		wal = true
	}
	return bolt, wal
}

// logStoreFor decides the log store of the store in dir: the one it has, or
// the setting for a new one. A directory holding both is refused: which
// log is the store's is the operator's to say.
func logStoreFor(dir, setting string) (kind string, kept bool, err error) {
	if bolt, wal := hasLogStores(dir); bolt && wal {
		return "", false, fmt.Errorf("data directory %s holds two raft logs, %s and %s/: move the one that is not this store's aside (the one it ran on last has the newer files) and start it again", dir, raftDBFile, walDir)
	}
	if have := existingLogStore(dir); have != "" {
		return have, setting != "" && have != setting, nil
	}
	if setting == "" {
		return LogStoreWAL, false, nil
	}
	return setting, false, nil
}

// logPath is the path the log store of kind keeps in dir, as errors and
// the damage mark name it.
func logPath(dir, kind string) string {
	if kind == LogStoreBoltDB {
		return filepath.Join(dir, raftDBFile)
	}
	return filepath.Join(dir, walDir)
}

// walLog is raft-wal with its meta store. Closing the store closes both
// (raft-wal v0.4.0 left the meta store open, and closing it twice is
// harmless), so that the store can open again in the same process.
//
// It also reopens the log after each segment rotation. raft-wal keeps a
// sealed segment's writer as its reader, and with it the writer's buffer,
// which grew to the largest append batch (megabytes: up to MaxAppendEntries
// entries of up to 512 KiB): memory that grew with every retained segment,
// so with retention. A log opened afresh reads its sealed segments through
// plain readers. The reopen happens before the next write, under an
// exclusive lock, when the new tail segment is nearly empty (its recovery
// reads little); measured in BENCH.md.
type walLog struct {
	dir         string
	logger      hclog.Logger
	segmentSize int // raft-wal's default (64 MiB) when 0; tests make it small

	mu      sync.RWMutex // exclusive while reopening
	w       *wal.WAL
	meta    *walmeta.Store
	rotated atomic.Bool // a segment was sealed since the last open
}

var (
	_ rawLogStore            = (*walLog)(nil)
	_ raft.MonotonicLogStore = (*walLog)(nil)
)

// openWALLog opens (creating if need be) the raft-wal log in dir/wal. Its
// small bbolt file is checked before it is mapped, like raft.db, and each
// value in it against its checksum (internal/walmeta); files raft-wal
// refuses are damage.
func openWALLog(dir string, logger hclog.Logger) (rawLogStore, error) {
	path := filepath.Join(dir, walDir)
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	l := &walLog{dir: path, logger: logger}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *walLog) open() error {
	meta := filepath.Join(l.dir, walmeta.FileName)
	if err := boltfile.Check(meta); err != nil {
		return err
	}
	var w *wal.WAL
	mdb := &walmeta.Store{}
	err := boltfile.Guard(meta, "open the raft log", func() (err error) {
		// The segments keep only their newest bytes in the page cache.
		files := wal.WithSegmentFiler(segment.NewFiler(l.dir, walcache.New()))
		if l.segmentSize > 0 {
			w, err = wal.Open(l.dir, wal.WithLogger(l.logger), wal.WithMetaStore(mdb), wal.WithMetricsCollector(rotations{l}), files, wal.WithSegmentSize(l.segmentSize))
		} else {
			w, err = wal.Open(l.dir, wal.WithLogger(l.logger), wal.WithMetaStore(mdb), wal.WithMetricsCollector(rotations{l}), files)
		}
		return err
	})
	if err != nil {
		mdb.Close()
		if errors.Is(err, wal.ErrCorrupt) || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s: %w", errLogDamaged, l.dir, err)
		}
		return err
	}
	if mdb.Migrated {
		l.logger.Info("raft-wal's meta file now carries a checksum of each value", "file", meta)
	}
	l.w, l.meta = w, mdb
	return nil
}

// rotations hears raft-wal's metrics: only segment rotations matter here.
type rotations struct{ l *walLog }

func (r rotations) IncrementCounter(name string, _ uint64) {
	if name == "segment_rotations" {
		r.l.rotated.Store(true)
	}
}

func (rotations) SetGauge(string, uint64) {}

// reopen closes and opens the log if a segment was sealed since it was
// opened. It runs before writes, never inside raft-wal's own calls.
func (l *walLog) reopen() error {
	if !l.rotated.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rotated.Swap(false) {
		return nil
	}
	err := errors.Join(l.w.Close(), l.meta.Close())
	if err == nil {
		err = l.open()
	}
	if err != nil {
		return fmt.Errorf("reopen the raft log %s after sealing a segment: %w", l.dir, err)
	}
	return nil
}

// Close closes the segment files and the meta store.
func (l *walLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.w.Close(), l.meta.Close())
}

func (l *walLog) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.FirstIndex()
}

func (l *walLog) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.LastIndex()
}

// GetLog reads the entry at index. An entry below the first index is not
// found, as with raft.db: raft-wal (v0.4.0 to v0.4.2) cuts its head only in its
// bookkeeping, and still returns a cut entry from its tail segment (up to
// 64 MiB of them), so a leader would send a member far behind the entries
// retention released (and a snapshot never), whatever the log said its
// first index was.
func (l *walLog) GetLog(index uint64, log *raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if first, err := l.w.FirstIndex(); err == nil && index < first {
		return raft.ErrLogNotFound
	}
	return l.w.GetLog(index, log)
}

func (l *walLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l *walLog) StoreLogs(logs []*raft.Log) error {
	if err := l.reopen(); err != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.StoreLogs(logs)
}

func (l *walLog) DeleteRange(min, max uint64) error {
	if err := l.reopen(); err != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.DeleteRange(min, max)
}

func (l *walLog) Set(k, v []byte) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.Set(k, v)
}

func (l *walLog) Get(k []byte) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.Get(k)
}

func (l *walLog) SetUint64(k []byte, v uint64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.SetUint64(k, v)
}

func (l *walLog) GetUint64(k []byte) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.GetUint64(k)
}

// IsMonotonic implements raft.MonotonicLogStore: raft-wal refuses gaps.
func (l *walLog) IsMonotonic() bool { return true }
