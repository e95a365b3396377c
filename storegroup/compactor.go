package storegroup

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The raft log in bytes, not only in entries.
//
// Raft compacts its log by entry counts: a snapshot once SnapshotThreshold
// entries were written (checked every SnapshotInterval, 2 minutes by
// default), keeping TrailingLogs entries after it. An entry holds up to
// about 1 MiB of merged client frames, so at 1 KiB flat out (50 MB/s per
// store) two minutes of log and 4096 trailing entries are gigabytes per
// store, whatever retention keeps. The compactor bounds the log beyond what
// retained messages refer to by bytes as well:
//
//   - once LogBytes bytes were written since its last check-point, it asks
//     raft for a snapshot (a reference snapshot: an index and a term, no
//     copy), after which raft compacts;
//   - it caps the trailing entries to about LogBytes of them, from the
//     average size of the entries written, never above TrailingLogs nor
//     below minTrailingLogs.
//
// So the log holds what retention keeps, plus at most about twice
// LogBytes (and raft-wal's segment granularity, 64 MiB).

// minTrailingLogs is the fewest entries kept after a snapshot, however
// large they are: a follower a moment behind still catches up from the log.
const minTrailingLogs = 64

// compactorInterval is how often the compactor looks at what was written.
const compactorInterval = time.Second

// logWritten counts what was stored in the raft log.
type logWritten struct {
	entries, bytes atomic.Uint64
}

func (w *logWritten) add(l *raft.Log) {
	w.entries.Add(1)
	w.bytes.Add(uint64(len(l.Data) + len(l.Extensions)))
}

// trailingFor is how many trailing entries keep about bound bytes when
// entries average avg bytes, within [minTrailingLogs, max].
func trailingFor(bound, avg, max uint64) uint64 {
	if avg == 0 || bound == 0 {
		return max
	}
	return min(max, uint64(minTrailingLogs)+bound/avg)
}

// compactLog runs until ctx ends, snapshotting every LogBytes written.
func (s *Store) compactLog(ctx context.Context) {
	bound := s.cfg.LogBytes
	if bound == 0 {
		return
	}
	t := time.NewTicker(compactorInterval)
	defer t.Stop()
	var lastEntries, lastBytes uint64
	trailing := s.cfg.TrailingLogs
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		entries, bytes := s.logStore.written.entries.Load(), s.logStore.written.bytes.Load()
		if bytes-lastBytes < bound || entries == lastEntries {
			continue
		}
		r := s.raftNode()
		if r == nil {
			continue
		}
		if want := trailingFor(bound, (bytes-lastBytes)/(entries-lastEntries), s.cfg.TrailingLogs); want != trailing {
			rc := r.ReloadableConfig()
			rc.TrailingLogs = want
			if err := r.ReloadConfig(rc); err != nil {
				s.log.Warn("could not bound the trailing raft log entries", "trailing_logs", want, "err", err)
			} else {
				trailing = want
			}
		}
		err := r.Snapshot().Error()
		switch {
		case err == nil, errors.Is(err, raft.ErrNothingNewToSnapshot):
		case errors.Is(err, raft.ErrRaftShutdown):
			return
		default:
			s.log.Warn("snapshot for log compaction failed; raft's own schedule still compacts", "written_bytes", bytes-lastBytes, "err", err)
		}
		lastEntries, lastBytes = entries, bytes
	}
}
