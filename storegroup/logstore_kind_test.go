package storegroup

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"umstore/internal/boltfile"
	"umstore/repository"
)

// A raft-wal log that ends before the latest snapshot (the store stopped
// between installing a snapshot and raft's clearing of the log) is emptied
// at start, so that raft's next append, after the snapshot, is not refused
// as a gap; a log that reaches the snapshot is left alone.
func TestDropLogBehindSnapshot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		last     uint64 // entries 1..last in the log
		wantLast uint64
	}{
		{"log behind the snapshot", 5, 0},
		{"log reaching past the snapshot", 12, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			raw, err := openWALLog(dir, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			var logs []*raft.Log
			for i := uint64(1); i <= tc.last; i++ {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("x")})
			}
			if err := raw.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			g := &guardedLogStore{log: raw, file: &boltfile.Guarded{Path: filepath.Join(dir, walDir), What: "raft log"}, lock: lockStub{}}
			t.Cleanup(func() { g.Close() })
			repo, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{NoSync: true, Log: g})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { repo.Close() })
			files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			snaps := &snapshotStore{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots"), repo: repo}
			sink, err := files.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sink.Write(encodeRef(10, 1)); err != nil {
				t.Fatal(err)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			s := &Store{cfg: Config{Name: "t"}, log: slog.Default(), logKind: LogStoreWAL, logStore: g, repo: repo, snaps: snaps}
			if err := s.dropLogBehindSnapshot(); err != nil {
				t.Fatal(err)
			}
			last, err := g.LastIndex()
			if err != nil || last != tc.wantLast {
				t.Fatalf("log ends at %d (%v), want %d", last, err, tc.wantLast)
			}
			if tc.wantLast == 0 {
				if err := g.StoreLogs([]*raft.Log{{Index: 11, Term: 2, Type: raft.LogCommand, Data: []byte("y")}}); err != nil {
					t.Fatalf("the append after the snapshot: %v", err)
				}
			}
		})
	}
}

// The raft-wal log reopens itself after a segment is sealed (releasing the
// sealed writer's buffer) and goes on serving and taking entries across
// many rotations, compaction included.
func TestWALReopensAfterRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := &walLog{dir: filepath.Join(dir, walDir), logger: hclog.NewNullLogger(), segmentSize: 64 << 10}
	if err := os.MkdirAll(l.dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := l.open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	first := l.w
	payload := bytes.Repeat([]byte("p"), 4000)
	for i := uint64(1); i <= 300; i += 3 {
		batch := []*raft.Log{}
		for j := i; j < i+3; j++ {
			batch = append(batch, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: append([]byte(fmt.Sprint(j, ":")), payload...)})
		}
		if err := l.StoreLogs(batch); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if l.w == first {
		t.Fatal("the log was never reopened after 1.2 MB in 64 KiB segments")
	}
	if err := l.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	for i := uint64(101); i <= 300; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil || !bytes.HasPrefix(e.Data, []byte(fmt.Sprint(i, ":"))) {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if f, _ := l.FirstIndex(); f > 101 {
		t.Fatalf("first index %d after compacting through 100", f)
	}
	if last, _ := l.LastIndex(); last != 300 {
		t.Fatalf("last index %d, want 300", last)
	}
}

// Entries cut from the head of a raft-wal log are not found, though they
// are still in its tail segment: a leader whose log retention compacted
// sends a member far behind a snapshot, not the released entries.
func TestWALHeadCutIsNotFound(t *testing.T) {
	t.Parallel()
	raw, err := openWALLog(t.TempDir(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	var logs []*raft.Log
	for i := uint64(1); i <= 100; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprint(i))})
	}
	if err := raw.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := raw.DeleteRange(1, 60); err != nil {
		t.Fatal(err)
	}
	if first, err := raw.FirstIndex(); err != nil || first != 61 {
		t.Fatalf("FirstIndex = %d, %v; want 61", first, err)
	}
	for _, tc := range []struct {
		index uint64
		want  error
	}{{1, raft.ErrLogNotFound}, {60, raft.ErrLogNotFound}, {61, nil}, {100, nil}, {101, raft.ErrLogNotFound}} {
		var l raft.Log
		// raft compares with ==, not errors.Is.
		if err := raw.GetLog(tc.index, &l); err != tc.want {
			t.Errorf("GetLog(%d) = %v, want %v", tc.index, err, tc.want)
		} else if err == nil && string(l.Data) != fmt.Sprint(tc.index) {
			t.Errorf("GetLog(%d) read %q", tc.index, l.Data)
		}
	}
}

// Raft clears a conflicting suffix of a follower's log after a leader
// change (a crash, a partition). raft-wal seals the tail segment there, and
// the log must still read after a restart: raft-wal v0.4.0 recorded the seal
// without writing the segment's index, so every entry of that segment
// answered "sealed segment has no index block" once reopened (chaos seed
// 1201, schedule 27; fixed in raft-wal v0.4.1).
func TestWALReadsAfterTailCutAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	raw, err := openWALLog(dir, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	store := func(from, to uint64, term uint64) {
		t.Helper()
		var logs []*raft.Log
		for i := from; i <= to; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprint(term, ":", i))})
		}
		if err := raw.StoreLogs(logs); err != nil {
			t.Fatalf("storing %d..%d: %v", from, to, err)
		}
	}
	store(1, 100, 1)
	if err := raw.DeleteRange(91, 100); err != nil { // the suffix a new leader overrules
		t.Fatal(err)
	}
	store(91, 95, 2)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err = openWALLog(dir, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("reopening after a tail cut: %v", err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, tc := range []struct {
		index uint64
		data  string
	}{{1, "1:1"}, {50, "1:50"}, {90, "1:90"}, {91, "2:91"}, {95, "2:95"}} {
		var l raft.Log
		if err := raw.GetLog(tc.index, &l); err != nil {
			t.Errorf("GetLog(%d) after a tail cut and a restart: %v", tc.index, err)
		} else if string(l.Data) != tc.data {
			t.Errorf("GetLog(%d) read %q, want %q", tc.index, l.Data, tc.data)
		}
	}
	store(96, 96, 2)
}
