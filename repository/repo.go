package repository

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"umstore/internal/boltfile"
)

// FormatVersion is the on-disk layout version this binary writes and reads.
// Open refuses files of any other version, so that an older binary never
// misreads a newer layout.
//
// Adding keys or buckets that older binaries of the same version never look
// at, and whose absence means "nothing recorded", does not change the
// version: meta/peer-groups came that way (a file written before it simply
// has none), and so did sources/<name>/receivers. A binary from before
// receivers opens a file holding some and reads everything else correctly: it
// never lists a source bucket's contents, only fetches its state and msgs by
// name. It cannot apply a Consumed entry, though: it stops on that unknown
// command, as any outdated store must.
//
// Retention (Trim) kept version 1 the same way: the source state is a msgpack
// map, and the new key "t" (TrimmedThrough) is simply absent from files
// written before it, meaning "never trimmed", which is exactly their state. A
// Trim otherwise only deletes messages and lowers counts with the existing
// layout. A binary from before Trim stops on the first Trim entry; one that
// opens a file already trimmed (a downgrade) ignores "t" and forgets it when
// it rewrites that source's state, which changes SourceInfo and Digest on that
// store but not which messages it holds or would store: the gaps below
// TrimmedThrough are gone, so such a binary takes a resent message there for
// a duplicate and does not store it either.
//
// Session expiry (ExpireSession) kept version 1 too: it only clears the
// state's existing "s" (Session) and adds the keys "es" and "et"
// (ExpiredSession, ExpiredUnixNano), absent from files written before it,
// meaning "no session ever expired". A binary from before it stops on the
// first ExpireSession entry; one that opens a file where a session expired
// ignores the two keys and forgets them when it rewrites that source's state,
// which changes SourceInfo and Digest on that store but nothing it applies.
//
// Version 2 stores messages in runs: the value under sources/<name>/msgs/<seq>
// is no longer one payload but an encoded run of consecutive messages
// starting at seq (see runs.go), so that a Publish of many messages costs one
// bbolt Put instead of one per message. A version 1 binary would take a run
// for a payload, so the version changed: version 1 files are refused (nothing
// using them was ever released, so there is no migration), and a version 1
// binary refuses version 2 files. Digest still hashes message by message, so
// it is the same for the same messages in either version.
//
// Version 3 stores a CRC32C with every message and adds two run kinds
// (runs.go): inline runs (payloads in the file, with their CRCs) and log
// runs (references into the raft log, with lengths and CRCs), and the
// bucket meta/log-refs counting the references per log entry. It reads
// version 2 files: their runs are legacy runs, told apart by their first
// byte, and read as before (without a CRC to check). Opening a version 2
// file for writing records version 3 in it, so a version 2 binary then
// refuses it: nothing else is rewritten, and a file of either version
// holds the same messages. A file of a version above 3 is refused with
// ErrNewerFormat: its store must run the newer umstored.
const FormatVersion = 3

// oldestFormatVersion is the oldest version this binary reads.
const oldestFormatVersion = 2

// Options tune how the bbolt file is opened. The zero value is ready to use.
type Options struct {
	// NoSync skips fsync on commit. Only for tests and benchmarks: a crash
	// can then lose applied entries that raft believes durable.
	NoSync bool

	// InitialMmapSize is the initial size of the read-only memory map, in
	// bytes (default 256 MiB). A long snapshot holds a read transaction; while
	// it does, a write that needs to grow the map waits for it to end, so a
	// generous map keeps Apply from stalling behind snapshots.
	InitialMmapSize int

	// LockTimeout bounds the wait for bbolt's exclusive file lock (default
	// 10 s). Another process holding the file gets a clear error instead of
	// a hung start-up.
	LockTimeout time.Duration

	// Log, if set, makes the repository an index over the raft log: a
	// Publish's messages are stored as references into the entry that
	// carried them (log runs, logref.go), read back through Log. Without
	// it they are stored in the file (inline runs).
	Log LogReader

	// OnFault, if set, is called once, with the error every later call
	// returns, when reading or writing the mapped file faulted or panicked
	// (see guard.go): the repository is unusable from then on, and its
	// owner should stop. It runs on the goroutine that hit the fault.
	OnFault func(error)
}

const (
	defaultInitialMmapSize = 256 << 20
	defaultLockTimeout     = 10 * time.Second
	restoreTempInfix       = ".restore-"
)

func (o Options) withDefaults() Options {
	if o.InitialMmapSize <= 0 {
		o.InitialMmapSize = defaultInitialMmapSize
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = defaultLockTimeout
	}
	return o
}

func (o Options) bolt(readOnly bool) *bolt.Options {
	return &bolt.Options{
		Timeout:         o.LockTimeout,
		NoSync:          o.NoSync,
		InitialMmapSize: o.InitialMmapSize,
		ReadOnly:        readOnly,
		// The freelist is rebuilt on open instead of being written on every
		// commit: cheaper commits, as etcd does.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	}
}

// Bucket and key names of the file layout (FormatVersion 2):
//
//	meta/format         uint64 big-endian FormatVersion
//	meta/applied-index  uint64 big-endian: last raft index applied
//	meta/applied-term   uint64 big-endian: its term
//	meta/group-id       InitGroup.GroupID
//	meta/group-index    int64 big-endian InitGroup.Index
//	meta/group-created  int64 big-endian InitGroup.UnixNano
//	meta/peer-groups/<index>    msgpack peerRecord: another group's identity,
//	                            index as uint64 big-endian (so in index order);
//	                            the bucket exists once a PeerGroup took effect
//	meta/members/<name>         msgpack memberRecord: where a member of the
//	                            group listens now (members.go); the bucket
//	                            exists once a MemberAddress took effect
//	sources/<name>/state        msgpack sourceState (a map with short keys;
//	                            "t", TrimmedThrough, only once trimmed; "es"
//	                            and "et", ExpiredSession and ExpiredUnixNano,
//	                            only once a session expired)
//	sources/<name>/msgs/<seq>   run of the messages seq, seq+1, ..., seq+n-1
//	                            (all held), seq as uint64 big-endian: uvarint
//	                            n ≥ 1, n uvarint payload lengths, the n
//	                            payloads back to back (see runs.go); runs never
//	                            overlap, each message held is in exactly one
//	sources/<name>/receivers/<receiver>
//	                            msgpack receiverRecord {s: seq, t: unix nano}:
//	                            how far the receiver consumed the source, keyed
//	                            by its name (so in name order); the bucket
//	                            exists once a Consumed for the source took effect
var (
	bucketMeta    = []byte("meta")
	bucketSources = []byte("sources")
	bucketMsgs    = []byte("msgs")

	bucketPeerGroups = []byte("peer-groups") // inside meta
	bucketReceivers  = []byte("receivers")   // inside a source's bucket

	keyFormat       = []byte("format")
	keyAppliedIndex = []byte("applied-index")
	keyAppliedTerm  = []byte("applied-term")
	keyGroupID      = []byte("group-id")
	keyGroupIndex   = []byte("group-index")
	keyGroupCreated = []byte("group-created")
	keyState        = []byte("state")
)

// Repo is the replicated state of one store group in one bbolt file: the
// group's identity, the last raft index applied, and per source its messages
// by sequence number and their bookkeeping.
//
// Apply, Snapshot and Restore are meant to be called from one goroutine (the
// raft FSM's). Reads may run concurrently with all of them.
type Repo struct {
	path string
	opts Options

	// mu guards db: held shared by every operation that uses the database,
	// exclusively by Close and by Restore while it swaps the file.
	mu sync.RWMutex
	db *bolt.DB

	// wmu serialises the write transaction: applying into it and
	// committing it (pending.go). pend is the transaction still open, with
	// the batches applied to it; nil when everything applied is committed.
	wmu  sync.Mutex
	pend *pending
	// commitErr is the error of a commit that failed: the repository
	// applies nothing after it.
	commitErr error

	// Caches of durable values, updated only after a commit (or after
	// opening a file), so they never run ahead of the file.
	applied     atomic.Uint64
	appliedTerm atomic.Uint64
	group       atomic.Pointer[groupInfo]

	// file guards every use of the bbolt file: after a fault, every call
	// but Close returns it (guard.go).
	file *boltfile.Guarded

	entries *entryCache // nil without Options.Log

	// The oldest log entry the file's messages refer to (0: none), as
	// committed, and those of open snapshots (pins); see LowestLogRef.
	refMu  sync.Mutex
	lowRef uint64
	pins   map[uint64]uint64
	pinSeq uint64

	corrupt atomic.Uint64 // messages Read found damaged
	healed  atomic.Uint64 // damaged messages a copy replaced (heal.go)

	damageMu sync.Mutex
	damaged  map[damagedKey]bool // found damaged, not healed yet
}

type groupInfo struct {
	id      string
	index   int
	created int64
}

// Open opens the repository file at path, creating and initialising it if
// it does not exist or is empty. It refuses a file that is not a repository
// or has an unknown format version with an error wrapping ErrFormat, and a
// damaged file (shorter than its meta pages say, no valid meta page, or one
// whose reading faulted) with an error wrapping both ErrFormat and
// boltfile.ErrDamaged: such a file is checked before bbolt maps it, so that
// it cannot fault the process.
func Open(path string, opts Options) (*Repo, error) {
	opts = opts.withDefaults()
	db, err := openDB(path, opts, false)
	if err != nil {
		return nil, err
	}
	// Only now that the file lock is ours: another process's Restore in
	// progress must not lose its staging file.
	removeRestoreLeftovers(path)
	r := &Repo{path: path, opts: opts, db: db, file: &boltfile.Guarded{Path: path, What: "repository", OnFault: opts.OnFault}}
	if opts.Log != nil {
		r.entries = &entryCache{log: opts.Log}
	}
	if err := r.load(); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// openDB opens path with bbolt and makes sure it holds a repository of a
// known format, initialising an empty file unless readOnly. The file is
// checked before bbolt maps it (boltfile.Check), and a fault while bbolt
// reads it (it walks every page to rebuild its free list) is returned as an
// error; damage wraps ErrFormat and boltfile.ErrDamaged.
func openDB(path string, opts Options, readOnly bool) (*bolt.DB, error) {
	var db *bolt.DB
	err := boltfile.Open(path, "open repository", opts.bolt(readOnly), func(bo *bolt.Options) error {
		var err error
		db, err = openBolt(path, bo, readOnly)
		return err
	})
	if err != nil && errors.Is(err, boltfile.ErrDamaged) && !errors.Is(err, ErrFormat) {
		return nil, fmt.Errorf("open repository %s: %w: %w", path, ErrFormat, err)
	}
	var fault *boltfile.Fault
	if errors.As(err, &fault) {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	return db, err
}

func openBolt(path string, bo *bolt.Options, readOnly bool) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, bo)
	if err != nil {
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrChecksum) {
			return nil, fmt.Errorf("open repository %s: %w: %v", path, ErrFormat, err)
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open repository %s: %w (is another umstored running on this data directory?): %w", path, ErrLocked, err)
		}
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	fresh, old := false, false
	err = db.View(func(tx *bolt.Tx) error {
		var err error
		fresh, err = checkFormat(tx)
		old = !fresh && err == nil && getU64(tx.Bucket(bucketMeta), keyFormat) < FormatVersion
		return err
	})
	switch {
	case err == nil && fresh && readOnly:
		err = fmt.Errorf("%w: the file is empty", ErrFormat)
	case err == nil && fresh:
		err = db.Update(initFormat)
	case err == nil && old && !readOnly:
		// Upgrade in place: version 3 reads everything version 2 wrote.
		err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, u64(FormatVersion)) })
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	return db, nil
}

// checkFormat reports whether tx sees an empty file (fresh) and otherwise
// checks that it is a repository this version can read.
func checkFormat(tx *bolt.Tx) (fresh bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return false, fmt.Errorf("%w: bbolt file without a %q bucket belongs to something else", ErrFormat, bucketMeta)
		}
		return true, nil
	}
	v := meta.Get(keyFormat)
	if len(v) != 8 {
		return false, fmt.Errorf("%w: no format version recorded", ErrFormat)
	}
	got := binary.BigEndian.Uint64(v)
	if got > FormatVersion {
		return false, fmt.Errorf("%w: %w: format version %d, this umstored reads versions %d to %d: the file was written by a newer umstored; run that version (or a newer one) on this host, or move the store's data directory aside so that it rejoins its group empty", ErrFormat, ErrNewerFormat, got, oldestFormatVersion, FormatVersion)
	}
	if got < oldestFormatVersion {
		return false, fmt.Errorf("%w: format version %d, this umstored reads only versions %d to %d; run a matching umstored version", ErrFormat, got, oldestFormatVersion, FormatVersion)
	}
	if tx.Bucket(bucketSources) == nil {
		return false, fmt.Errorf("%w: %q bucket missing", ErrFormat, bucketSources)
	}
	return false, nil
}

func initFormat(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keyFormat, u64(FormatVersion)); err != nil {
		return err
	}
	_, err = tx.CreateBucketIfNotExists(bucketSources)
	return err
}

// load refreshes the caches from the file.
func (r *Repo) load() error {
	return r.guard("read the repository's state", func() error { return r.db.View(r.loadTx) })
}

func (r *Repo) loadTx(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	idx, term := readApplied(meta)
	g := readGroup(meta)
	r.applied.Store(idx)
	r.appliedTerm.Store(term)
	r.group.Store(&g)
	r.setLowRef(lowestLogRef(meta))
	return nil
}

func readApplied(meta *bolt.Bucket) (index, term uint64) {
	return getU64(meta, keyAppliedIndex), getU64(meta, keyAppliedTerm)
}

func readGroup(meta *bolt.Bucket) groupInfo {
	return groupInfo{
		id:      string(meta.Get(keyGroupID)), // string() copies out of the tx
		index:   int(int64(getU64(meta, keyGroupIndex))),
		created: int64(getU64(meta, keyGroupCreated)),
	}
}

// removeRestoreLeftovers deletes temporary files of a Restore that a crash
// interrupted; they are never the live file.
func removeRestoreLeftovers(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+restoreTempInfix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Close closes the file. It waits for unreleased snapshots. Later calls
// return ErrClosed.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return ErrClosed
	}
	r.wmu.Lock()
	cerr := r.commitLocked() // what was applied is kept, not replayed
	r.wmu.Unlock()
	err := r.db.Close()
	r.db = nil
	if err == nil {
		err = cerr
	}
	return err
}

// Path returns the file's path.
func (r *Repo) Path() string { return r.path }

// AppliedIndex returns the last raft index applied, as durably recorded. It
// is cheap (an atomic load) and safe to call at any time.
func (r *Repo) AppliedIndex() uint64 { return r.applied.Load() }

// AppliedTerm returns the raft term of the entry at AppliedIndex.
func (r *Repo) AppliedTerm() uint64 { return r.appliedTerm.Load() }

// GroupID returns the identity recorded by InitGroup, or "" before it.
func (r *Repo) GroupID() string { return r.group.Load().id }

// GroupIndex returns the group index recorded by InitGroup, or 0 before it.
func (r *Repo) GroupIndex() int { return r.group.Load().index }

// HasState reports whether the repository holds anything of a group: an
// applied entry or a group identity. A store without state must never help
// bootstrap or elect a leader for an existing group.
func (r *Repo) HasState() bool { return r.AppliedIndex() > 0 || r.GroupID() != "" }

// view runs fn in a read transaction, waiting for a Restore in progress.
// A fault while reading the file is returned as an error (guard.go).
func (r *Repo) view(fn func(tx *bolt.Tx) error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return ErrClosed
	}
	return r.guard("read the repository", func() error { return r.db.View(fn) })
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func getU64(b *bolt.Bucket, key []byte) uint64 {
	v := b.Get(key)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
