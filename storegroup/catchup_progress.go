package storegroup

import "sync/atomic"

// received counts what a store has received from its group since it
// opened: the bytes of snapshot streams installed from a leader, and the
// log entries applied with their payload bytes. An empty store catching
// up (a wiped host's restore) shows its progress by it, in its log and its
// status, while its applied index alone stands still during a snapshot.
type received struct {
	snapshotBytes atomic.Uint64
	entries       atomic.Uint64
	entryBytes    atomic.Uint64
}

// snapshot counts n bytes of a snapshot stream received; nil counts nothing.
func (r *received) snapshot(n int) {
	if r != nil {
		r.snapshotBytes.Add(uint64(n))
	}
}

// applied counts entries applied and their payload bytes; nil counts
// nothing.
func (r *received) applied(entries, bytes int) {
	if r != nil {
		r.entries.Add(uint64(entries))
		r.entryBytes.Add(uint64(bytes))
	}
}

// bytes is everything received: snapshot streams and entry payloads.
func (r *received) bytes() uint64 {
	return r.snapshotBytes.Load() + r.entryBytes.Load()
}
