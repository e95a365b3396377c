package storegroup

import (
	"log/slog"
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
			snaps := &snapshotStore{FileSnapshotStore: files, repo: repo}
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
