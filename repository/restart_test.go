package repository

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestAppliedIndexSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.db")
	r, err := Open(path, Options{}) // with fsync, as in production
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, []Entry{
		{Index: 3, Term: 1, Data: EncodeInitGroup(InitGroup{GroupID: "g", Index: 2})},
		{Index: 4, Term: 2, Data: EncodePublish(pub("a", 1, 3))},
		{Index: 9, Term: 3},
	})
	want := mustDigest(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}

	r = openAt(t, path)
	if r.AppliedIndex() != 9 || r.AppliedTerm() != 3 {
		t.Errorf("after reopen applied = %d/%d, want 9/3", r.AppliedIndex(), r.AppliedTerm())
	}
	if r.GroupID() != "g" || r.GroupIndex() != 2 || !r.HasState() {
		t.Errorf("after reopen group = %q/%d", r.GroupID(), r.GroupIndex())
	}
	if got := mustDigest(t, r); got != want {
		t.Error("digest changed across reopen")
	}
}

// After a restart raft replays entries from its last snapshot, which may
// overlap what the repository already holds: the overlap must be skipped and
// the rest applied as if there had been no restart.
func TestReplayAfterReopen(t *testing.T) {
	var cmds []any
	for i := 0; i < 80; i++ {
		switch i % 4 {
		case 0:
			cmds = append(cmds, Register{Source: "a", Session: "s", UnixNano: int64(i)})
		case 3:
			cmds = append(cmds, nil)
		default:
			cmds = append(cmds, pub("a", uint64(i)*2, 3)) // overlapping ranges and gaps
		}
	}
	log := logOf(1, cmds...)

	straight := openTest(t)
	mustApply(t, straight, log)

	r := openTest(t)
	mustApply(t, r, log[:50])
	r = reopen(t, r)
	res := mustApply(t, r, log[29:]) // replay from index 30
	for _, x := range res {
		if skipped := x.Index <= 50; x.Skipped != skipped {
			t.Errorf("entry %d: Skipped = %v, want %v", x.Index, x.Skipped, skipped)
		}
	}
	if r.AppliedIndex() != 80 {
		t.Errorf("AppliedIndex = %d, want 80", r.AppliedIndex())
	}
	if mustDigest(t, r) != mustDigest(t, straight) {
		t.Error("replay after reopen diverged from applying the log straight")
	}
}

func TestOpenRefusesUnknownFormat(t *testing.T) {
	path := repoWithFormat(t, FormatVersion+1)
	if _, err := Open(path, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open of a future format: %v, want ErrFormat", err)
	}
}

// repoWithFormat creates a repository file and rewrites its recorded format
// version to v, returning its path.
func repoWithFormat(t *testing.T, v uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "repo.db")
	openAt(t, path).Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyFormat, u64(v))
	}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(garbage, Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Open of a non-bbolt file: %v, want ErrFormat", err)
	}

	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("logs"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(foreign, Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Open of another program's bbolt file: %v, want ErrFormat", err)
	}
}

func TestOpenTimesOutOnLockedFile(t *testing.T) {
	r := openTest(t)
	start := time.Now()
	_, err := Open(r.Path(), Options{LockTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second Open of a file in use: %v, want a lock error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open waited %v", d)
	}
}

func TestOpenRemovesRestoreLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "repo.db")
	left := path + restoreTempInfix + "123"
	other := filepath.Join(dir, "other.db.restore-1")
	for _, p := range []string{left, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openAt(t, path)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("leftover %s still there: %v", left, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("file of another repository removed: %v", err)
	}
}
