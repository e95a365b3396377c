package storegroup_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"umstore/dirlock"
	"umstore/repository"
	"umstore/storegroup"
)

// writeRepo replaces dir/repo.db with one holding group index's identity
// id, applied at log index applied.
func writeRepo(t *testing.T, dir string, index int, id string, applied uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "repo.db")); err != nil {
		t.Fatal(err)
	}
	r, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Apply([]repository.Entry{{Index: applied, Term: 1, Data: repository.EncodeInitGroup(repository.InitGroup{GroupID: id, Index: index})}}); err != nil {
		t.Fatal(err)
	}
}

// Promoting a backup puts its files in the data directory, keeps the data
// directory's own lock files, moves what the directory held to a new
// backup, and removes the promoted backup.
func TestPromoteBackup(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "G1S1")
	writeRepo(t, dir, 1, "current", 3)
	moved, err := storegroup.BackupDataDir(dir) // .bak.0001: the state to promote
	if err != nil {
		t.Fatal(err)
	}
	writeRepo(t, moved, 1, "wanted", 7) // overwrite it with recognisable content
	if err := os.WriteFile(filepath.Join(moved, "LOCK"), []byte("backup's"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeRepo(t, dir, 1, "newer", 9)
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), []byte("dir's"), 0o640); err != nil {
		t.Fatal(err)
	}

	p, err := storegroup.PromoteBackup(dir, moved+"/", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Backup != moved || p.Content.GroupID != "wanted" || p.Content.AppliedIndex != 7 || p.Moved != dir+".bak.0002" {
		t.Errorf("promotion: %+v", p)
	}
	if c, err := storegroup.InspectDataDir(dir); err != nil || c.GroupID != "wanted" {
		t.Errorf("the data directory holds %+v (%v), want the promoted backup", c, err)
	}
	if c, err := storegroup.InspectDataDir(p.Moved); err != nil || c.GroupID != "newer" {
		t.Errorf("the previous content went to %s, which holds %+v (%v)", p.Moved, c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "LOCK")); string(b) != "dir's" {
		t.Errorf("the data directory's LOCK is %q: a lock file was moved in", b)
	}
	if _, err := os.Stat(moved); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the promoted backup is still there: %v", err)
	}
}

// A data directory without state is not backed up before a promotion:
// there is nothing to keep.
func TestPromoteBackupIntoEmptyDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "G1S1")
	writeRepo(t, dir, 2, "g2", 4)
	backup, err := storegroup.BackupDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := storegroup.PromoteBackup(dir, backup, 2)
	if err != nil || p.Moved != "" || p.Content.GroupIndex != 2 {
		t.Fatalf("promotion %+v, %v", p, err)
	}
	if backups, _ := storegroup.ListBackups(dir); len(backups) != 0 {
		t.Errorf("backups left: %+v", backups)
	}
}

// What cannot be promoted is refused without touching the data directory.
func TestPromoteBackupRefusals(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "G1S1")
	writeRepo(t, dir, 2, "g2", 4)
	backup, err := storegroup.BackupDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+".bak.0002", 0o750); err != nil { // a backup without a repository
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, backup string
		group        int
		want         string
		is           error
	}{
		{"another group's backup", backup, 1, "holds group 2, not 1", nil},
		{"not a backup", filepath.Join(filepath.Dir(dir), "elsewhere"), 2, "not a backup", storegroup.ErrNotABackup},
		{"an unreadable backup", dir + ".bak.0002", 2, "cannot be read", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := storegroup.PromoteBackup(dir, tc.backup, tc.group)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if storegroup.DataDirHasState(dir) {
				t.Fatal("a refused promotion changed the data directory")
			}
		})
	}
}

// The data directories' locks keep recovery off a running store's files,
// all or none.
func TestLockDataDirs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	a, b := filepath.Join(base, "G1S1"), filepath.Join(base, "G1S2")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	held, err := storegroup.LockDataDirs(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storegroup.LockDataDirs(a, b); !errors.Is(err, dirlock.ErrLocked) {
		t.Fatalf("locking a held directory: %v, want dirlock.ErrLocked", err)
	}
	held()
	release, err := storegroup.LockDataDirs(a, b) // a was released when b failed
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// Accepting the loss leaves the mark a store reads at its next start.
func TestAcceptLoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := storegroup.AcceptLoss(dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "accept-loss")); err != nil || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("accept-loss: %q, %v", b, err)
	}
}

// A store that opened its files and refused to start ("no store with
// state") leaves a repository and a raft log without content. Promoting a
// backup over it must not keep those files as a new numbered backup: it
// would be the newest, the one an operator takes for the next to promote.
// Before, they became .bak.0002.
func TestPromoteBackupOverAnEmptyStoresFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "G1S1")
	writeRepo(t, dir, 1, "wanted", 7)
	backup, err := storegroup.BackupDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// What an empty store leaves behind: both files, no content.
	r, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	bs, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	bs.Close()
	if !storegroup.DataDirHasState(dir) {
		t.Fatal("the empty store's files are not there")
	}
	if empty, err := storegroup.DataDirIsEmpty(dir); err != nil || !empty {
		t.Fatalf("DataDirIsEmpty = %v, %v; want true", empty, err)
	}
	p, err := storegroup.PromoteBackup(dir, backup, 1)
	if err != nil || p.Moved != "" {
		t.Fatalf("promotion %+v, %v; want nothing moved aside", p, err)
	}
	if backups, _ := storegroup.ListBackups(dir); len(backups) != 0 {
		t.Fatalf("backups left: %+v", backups)
	}
	if c, err := storegroup.InspectDataDir(dir); err != nil || c.GroupID != "wanted" {
		t.Fatalf("the data directory holds %+v (%v)", c, err)
	}
	// A raft log with an entry is state, and is kept.
	writeRepo(t, dir+".bak.0005", 1, "older", 2)
	bs, err = raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bs.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	bs.Close()
	if empty, _ := storegroup.DataDirIsEmpty(dir); empty {
		t.Fatal("a directory with a term and a repository counts as empty")
	}
}
