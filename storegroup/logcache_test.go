package storegroup

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the log store, and can fail
// its next write.
type countingStore struct {
	*raft.InmemStore
	reads   int
	failing bool
}

func (s *countingStore) GetLog(i uint64, l *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(i, l)
}

func (s *countingStore) StoreLogs(logs []*raft.Log) error {
	if s.failing {
		return errors.New("disk full")
	}
	return s.InmemStore.StoreLogs(logs)
}

func entries(from, to uint64, size int) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Data: make([]byte, size)})
	}
	return out
}

// The cache answers reads of its latest entries, within a count and a byte
// bound; anything else, and everything after the log was rewritten or a
// write failed, is read from the store, and every read returns the entry
// asked for.
func TestLogCacheBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(c *logCache, s *countingStore)
		cached []uint64 // read from memory
		stored []uint64 // read from the store
	}{
		{"byte budget keeps the newest", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 10, 100))) // budget 350: 3 entries
		}, []uint64{8, 9, 10}, []uint64{1, 7}},
		{"count bound", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 3, 1)))
			must(t, c.StoreLogs(entries(4, 9, 1))) // 4 slots
		}, []uint64{6, 7, 8, 9}, []uint64{1, 5}},
		{"an entry over the budget is kept alone", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 2, 10)))
			must(t, c.StoreLogs(entries(3, 3, 1000)))
		}, []uint64{3}, []uint64{1, 2}},
		{"rewritten log starts again", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 4, 10)))
			must(t, c.DeleteRange(3, 4))
			must(t, c.StoreLogs(entries(3, 3, 20)))
		}, []uint64{3}, []uint64{1, 2}},
		{"a gap starts again", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 2, 10)))
			must(t, c.StoreLogs(entries(5, 6, 10)))
		}, []uint64{5, 6}, []uint64{1, 2}},
		{"a failed write empties it", func(c *logCache, s *countingStore) {
			must(t, c.StoreLogs(entries(1, 2, 10)))
			s.failing = true
			if err := c.StoreLogs(entries(3, 3, 10)); err == nil {
				t.Fatal("the failed write reported success")
			}
			s.failing = false
		}, nil, []uint64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &countingStore{InmemStore: raft.NewInmemStore()}
			c := newLogCache(s, 4, 350)
			tc.setup(c, s)
			check := func(idx uint64, fromStore bool) {
				t.Helper()
				before := s.reads
				var l raft.Log
				if err := c.GetLog(idx, &l); err != nil || l.Index != idx {
					t.Fatalf("GetLog(%d) = entry %d, %v", idx, l.Index, err)
				}
				if got := s.reads > before; got != fromStore {
					t.Fatalf("GetLog(%d) read the store: %v, want %v", idx, got, fromStore)
				}
			}
			for _, i := range tc.cached {
				check(i, false)
			}
			for _, i := range tc.stored {
				check(i, true)
			}
			if c.bytes > 350 && c.first != c.last {
				t.Fatalf("%d bytes cached over a budget of 350", c.bytes)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// monotonic is a log store that refuses gaps, as raft-wal does.
type monotonic struct{ *raft.InmemStore }

func (monotonic) IsMonotonic() bool { return true }

// raft asks the log store it is given, the cache, whether it refuses gaps:
// the cache must answer for the store under it, or raft appends after a
// snapshot's gap that raft-wal refuses.
func TestLogCacheTellsRaftTheStoreIsMonotonic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		store raft.LogStore
		want  bool
	}{
		{"raft-wal-like store", monotonic{raft.NewInmemStore()}, true},
		{"a store that takes gaps", raft.NewInmemStore(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var store raft.LogStore = newLogCache(tt.store, 4, 1<<20)
			m, ok := store.(raft.MonotonicLogStore)
			if got := ok && m.IsMonotonic(); got != tt.want {
				t.Fatalf("the cache says monotonic %v, the store under it %v", got, tt.want)
			}
		})
	}
}

// holds tells the raft port which entries it reads are the cache's own
// bytes in memory (checked when they came in), and which were read back
// from the log file: an entry evicted, or the same entry in other memory.
func TestLogCacheHolds(t *testing.T) {
	s := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(s, 4, 1<<20)
	must(t, c.StoreLogs(entries(1, 6, 10))) // 3..6 cached
	read := func(i uint64) *raft.Log {
		var l raft.Log
		must(t, c.GetLog(i, &l))
		return &l
	}
	tests := []struct {
		name string
		l    *raft.Log
		want bool
	}{
		{"read from the cache", read(5), true},
		{"evicted, read from the store", read(2), false},
		{"the same entry in other memory", func() *raft.Log {
			l := *read(5)
			l.Data = append([]byte(nil), l.Data...)
			return &l
		}(), false},
		{"another term at the index", func() *raft.Log { l := *read(5); l.Term = 2; return &l }(), false},
		{"past the cache", &raft.Log{Index: 7, Term: 1, Data: make([]byte, 10)}, false},
	}
	for _, tt := range tests {
		if got := c.holds(tt.l); got != tt.want {
			t.Errorf("%s: holds = %v, want %v", tt.name, got, tt.want)
		}
	}
	c.reset()
	if c.holds(read(5)) {
		t.Error("holds an entry after the cache was reset")
	}
}
