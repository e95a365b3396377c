package repository

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The repository as an index over the raft log.
//
// With Options.Log set, a Publish's messages are not copied into the
// repository file: a log run (runs.go) records the raft index of the entry
// that carried them, their position in it, and each message's length and
// CRC32C. A payload is then written once per store, in its raft log, and
// read back through LogReader. The log must keep every entry a retained
// message refers to: LowestLogRef says which is the oldest, and the store's
// log store clamps compaction to it, so retention (Trim) decides how much
// log stays.
//
// This is safe for three reasons. Raft hands the FSM only committed
// entries, and a node stores an entry in its own log (fsynced) before it
// applies it, so a reference always points into a durable entry of this
// store's own log; committed entries are never truncated. A reference is a
// function of the entry's index and content, both the same on every store,
// so applying the same log twice gives the same repository. And raft resets
// a member's log only when it installs a snapshot, which replaces the whole
// repository with one whose messages are inline (a snapshot stream carries
// payloads, never references).

// LogReader reads committed raft log entries for the repository's log runs.
type LogReader interface {
	// ReadEntry returns the command data of the entry at index, as Apply
	// received it in Entry.Data. The caller may keep it; it must not be
	// modified afterwards. An entry that is missing or cannot be decoded is
	// an error wrapping ErrCorrupt; other errors (a closed log) are
	// returned as they are.
	ReadEntry(index uint64) ([]byte, error)
}

// bucketLogRefs, inside meta, counts the runs referring to each log entry:
// key the entry's index (uint64 big-endian), value a uvarint count. Its
// first key is the oldest entry the log must keep.
var bucketLogRefs = []byte("log-refs")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC32C (Castagnoli) of p: the checksum a message is
// stored with, and the one a Publish's Checksums carry.
func Checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// entryCache reads the payloads of log entries, keeping the last entry
// decoded: a Read or a snapshot stream walks the messages of one entry
// after the other.
type entryCache struct {
	log LogReader

	mu       sync.Mutex
	index    uint64
	payloads [][]byte
}

// payload returns payload pos of the Publish in the entry at index.
func (c *entryCache) payload(index, pos uint64) ([]byte, error) {
	if c == nil || c.log == nil {
		return nil, fmt.Errorf("%w: a message refers to raft log entry %d, and the repository was opened without its log", ErrCorrupt, index)
	}
	c.mu.Lock()
	cached, payloads := c.index, c.payloads
	c.mu.Unlock()
	if cached != index || payloads == nil {
		// Read and decode outside the lock: readers of other entries
		// need not wait for this one's disk read.
		data, err := c.log.ReadEntry(index)
		if err != nil {
			return nil, fmt.Errorf("read raft log entry %d: %w", index, err)
		}
		if payloads, err = publishPayloads(data); err != nil {
			return nil, fmt.Errorf("%w: raft log entry %d: %v", ErrCorrupt, index, err)
		}
		c.mu.Lock()
		c.index, c.payloads = index, payloads
		c.mu.Unlock()
	}
	if pos >= uint64(len(payloads)) {
		return nil, fmt.Errorf("%w: raft log entry %d holds %d messages, a run refers to position %d", ErrCorrupt, index, len(payloads), pos)
	}
	return payloads[pos], nil
}

// forget drops the cached entry (a Restore replaced the repository; the
// log was reset).
func (c *entryCache) forget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.index, c.payloads = 0, nil
	c.mu.Unlock()
}

// publishPayloads decodes the payloads of a Publish or PublishAs entry.
func publishPayloads(data []byte) ([][]byte, error) {
	cmd, err := DecodeCommand(data)
	if err != nil {
		return nil, err
	}
	switch c := cmd.(type) {
	case Publish:
		return c.Payloads, nil
	case PublishAs:
		return c.Payloads, nil
	}
	return nil, fmt.Errorf("the entry is a %T, not a Publish", cmd)
}

// addLogRef and dropLogRef count a log run referring to the entry at index.
func addLogRef(meta *bolt.Bucket, index uint64) error {
	b, err := meta.CreateBucketIfNotExists(bucketLogRefs)
	if err != nil {
		return err
	}
	key := u64(index)
	n, _ := binary.Uvarint(b.Get(key))
	return b.Put(key, binary.AppendUvarint(nil, n+1))
}

func dropLogRef(meta *bolt.Bucket, index uint64) error {
	b := meta.Bucket(bucketLogRefs)
	key := u64(index)
	var n uint64
	if b != nil {
		n, _ = binary.Uvarint(b.Get(key))
	}
	switch {
	case n == 0:
		return fmt.Errorf("%w: a log run refers to raft log entry %d, which no count records", ErrFormat, index)
	case n == 1:
		return b.Delete(key)
	}
	return b.Put(key, binary.AppendUvarint(nil, n-1))
}

// lowestLogRef returns the oldest entry any run refers to, 0 if none.
func lowestLogRef(meta *bolt.Bucket) uint64 {
	b := meta.Bucket(bucketLogRefs)
	if b == nil {
		return 0
	}
	k, _ := b.Cursor().First()
	if len(k) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// highestLogRef returns the newest entry any run refers to, 0 if none.
func highestLogRef(meta *bolt.Bucket) uint64 {
	b := meta.Bucket(bucketLogRefs)
	if b == nil {
		return 0
	}
	k, _ := b.Cursor().Last()
	if len(k) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// LowestLogRef returns the oldest raft log entry the repository still
// needs: the oldest any retained message refers to, or that an open
// Snapshot (which may still stream it) refers to. ok is false when none is
// needed. The raft log must never delete it or anything after it; its
// store's log store clamps compaction to it. The value only moves forward
// while entries are applied, except from none to the entry just applied.
func (r *Repo) LowestLogRef() (index uint64, ok bool) {
	r.refMu.Lock()
	defer r.refMu.Unlock()
	low := r.lowRef
	for _, pin := range r.pins {
		if pin != 0 && (low == 0 || pin < low) {
			low = pin
		}
	}
	return low, low != 0
}

// LogRefRange returns the oldest and newest raft log entries the
// repository's messages refer to (0, 0 if none), as committed in the file.
// A store checks at start that its log still holds them.
func (r *Repo) LogRefRange() (low, high uint64, err error) {
	err = r.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		low, high = lowestLogRef(meta), highestLogRef(meta)
		return nil
	})
	return low, high, err
}

// setLowRef records the committed oldest reference.
func (r *Repo) setLowRef(low uint64) {
	r.refMu.Lock()
	r.lowRef = low
	r.refMu.Unlock()
}

// pin keeps the oldest reference of a snapshot's view, until unpin.
func (r *Repo) pin(low uint64) (id uint64) {
	if low == 0 {
		return 0
	}
	r.refMu.Lock()
	defer r.refMu.Unlock()
	if r.pins == nil {
		r.pins = map[uint64]uint64{}
	}
	r.pinSeq++
	r.pins[r.pinSeq] = low
	return r.pinSeq
}

func (r *Repo) unpin(id uint64) {
	if id == 0 {
		return
	}
	r.refMu.Lock()
	delete(r.pins, id)
	r.refMu.Unlock()
}
