package storegroup

import (
	"sync"
	"unsafe"

	"github.com/hashicorp/raft"
)

// Bounds of a store's cache of its latest raft log entries (logCache).
const (
	logCacheMaxEntries = 1024    // raft sends at most MaxAppendEntries (<= 1024) at once
	logCacheMaxBytes   = 8 << 20 // merged client frames make entries of up to about 1 MiB
)

// logCache keeps a store's latest raft log entries in memory, so that the
// leader sends a follower what it just wrote without reading it back from
// its log file. It is bounded by bytes as well as by count: raft's own
// LogCache counts entries only, so it has to be sized for the largest
// (1 MiB of merged frames, a cache of 8), and a thousand sources, each an
// entry of a few KiB per round, missed it on nearly every send.
type logCache struct {
	raft.LogStore

	mu     sync.RWMutex
	ring   []*raft.Log // entry i sits at i % len(ring)
	first  uint64      // oldest cached index; 0: the cache is empty
	last   uint64      // newest cached index
	bytes  int         // payload bytes of the cached entries
	budget int
}

func newLogCache(store raft.LogStore, entries, budget int) *logCache {
	return &logCache{LogStore: store, ring: make([]*raft.Log, entries), budget: budget}
}

var _ raft.MonotonicLogStore = (*logCache)(nil)

// IsMonotonic passes on whether the store under the cache refuses gaps
// (raft-wal does). raft asks its log store, which is the cache: without
// this it took raft-wal for a store that accepts gaps, kept the last
// entries after installing a snapshot, and appended the next one after
// the gap, which raft-wal refused ("non-monotonic log entries"): the
// follower stopped.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// GetLog answers from memory when it can.
func (c *logCache) GetLog(index uint64, log *raft.Log) error {
	c.mu.RLock()
	if c.first != 0 && index >= c.first && index <= c.last {
		if l := c.ring[index%uint64(len(c.ring))]; l != nil && l.Index == index {
			*log = *l
			c.mu.RUnlock()
			return nil
		}
	}
	c.mu.RUnlock()
	return c.LogStore.GetLog(index, log)
}

// holds reports whether l is this cache's copy of its entry, the very
// bytes in memory (raft's GetLog from the cache shares them), not a copy
// read back from the log file. The raft port checks only the others
// before sending (entrycheck.go): a cached entry was checked when it came
// into memory, on arrival from the leader or as this store's client
// server took it.
func (c *logCache) holds(l *raft.Log) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.first == 0 || l.Index < c.first || l.Index > c.last {
		return false
	}
	e := c.ring[l.Index%uint64(len(c.ring))]
	return e != nil && e.Index == l.Index && e.Term == l.Term && len(e.Data) == len(l.Data) &&
		len(l.Data) > 0 && unsafe.SliceData(e.Data) == unsafe.SliceData(l.Data)
}

// StoreLog stores one entry (see StoreLogs).
func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

// StoreLogs writes the entries to the log store and, once they are
// written, keeps them.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		c.reset() // what was written, if anything, is read back from the store
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if c.first != 0 && l.Index != c.last+1 {
			c.resetLocked() // not the next entry (a follower's log rewritten): start again
		}
		slot := l.Index % uint64(len(c.ring))
		if old := c.ring[slot]; old != nil && c.first != 0 && old.Index >= c.first {
			c.evictLocked() // the ring is full: its oldest is in this slot
		}
		c.ring[slot] = l
		c.bytes += len(l.Data) + len(l.Extensions)
		if c.first == 0 {
			c.first = l.Index
		}
		c.last = l.Index
		for c.bytes > c.budget && c.first < c.last {
			c.evictLocked()
		}
	}
	return nil
}

// DeleteRange removes the entries from the store; the cache starts again,
// as raft's own does.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.reset()
	return c.LogStore.DeleteRange(min, max)
}

func (c *logCache) reset() {
	c.mu.Lock()
	c.resetLocked()
	c.mu.Unlock()
}

func (c *logCache) resetLocked() {
	clear(c.ring)
	c.first, c.last, c.bytes = 0, 0, 0
}

// evictLocked drops the oldest cached entry.
func (c *logCache) evictLocked() {
	slot := c.first % uint64(len(c.ring))
	if l := c.ring[slot]; l != nil {
		c.bytes -= len(l.Data) + len(l.Extensions)
		c.ring[slot] = nil
	}
	if c.first == c.last {
		c.first, c.last = 0, 0
		return
	}
	c.first++
}
