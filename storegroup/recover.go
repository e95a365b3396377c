package storegroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"umstore/dirlock"
	"umstore/internal/atomicfile"
)

// Data-directory surgery for an operator whose group cannot recover by
// itself (`umstored recover`): promote a numbered backup, or accept the
// loss. Both change files a running store would use, so they are done under
// the data directories' locks (LockDataDirs).

// ErrNotABackup means the path given is not one of the data directory's
// numbered backups.
var ErrNotABackup = errors.New("not a backup of this data directory")

// LockDataDirs takes, on each of dirs, the lock a running store holds on
// its data directory, so that recovery never changes the files under a
// running store. It takes all of them or none; release undoes it. When a
// store holds one, the error wraps dirlock.ErrLocked and names the holder.
func LockDataDirs(dirs ...string) (release func(), err error) {
	var locks []dirlock.Lock
	release = func() {
		for _, l := range locks {
			l.Release()
		}
	}
	for _, dir := range dirs {
		l, err := dirlock.Acquire(context.Background(), dir, dirlock.Options{Name: filepath.Base(dir)})
		if err != nil {
			release()
			return nil, err
		}
		locks = append(locks, l)
	}
	return release, nil
}

// Promotion is what PromoteBackup did.
type Promotion struct {
	// Backup is the promoted backup's path: its files are now the data
	// directory's, and the backup is gone.
	Backup string
	// Content is what the data directory holds now.
	Content BackupContent
	// Moved is where the data directory's previous content went (a new
	// numbered backup), or "" if it held no state.
	Moved string
}

// PromoteBackup makes backup, one of the numbered backups of data
// directory dir, the content of dir. Content with state already in dir is
// moved to a new numbered backup first, so nothing is lost. A backup that
// holds another group than group is refused. The directory's store must not
// be running (hold LockDataDirs). ErrNotABackup: backup is not one of dir's.
//
// When moving the backup in fails, the Promotion returned with the error
// still says where dir's previous content went.
func PromoteBackup(dir, backup string, group int) (Promotion, error) {
	backup = filepath.Clean(backup)
	backups, err := ListBackups(dir)
	if err != nil {
		return Promotion{}, err
	}
	for _, b := range backups {
		if filepath.Clean(b.Path) != backup {
			continue
		}
		p := Promotion{Backup: b.Path}
		if p.Content, err = InspectDataDir(b.Path); err != nil {
			return Promotion{}, fmt.Errorf("backup %s cannot be read: %v", b.Path, err)
		}
		if p.Content.GroupIndex != 0 && p.Content.GroupIndex != group {
			return Promotion{}, fmt.Errorf("backup %s holds group %d, not %d", b.Path, p.Content.GroupIndex, group)
		}
		// Only content with state is kept as a backup: the files an empty
		// store leaves (it opened its repository and raft log, and refused
		// to start: "no store with state") would otherwise become the
		// newest numbered backup, which an operator takes for the one to
		// promote next. Those are removed instead.
		empty, err := DataDirIsEmpty(dir)
		if err != nil {
			return Promotion{}, fmt.Errorf("inspect %s before promoting %s: %w", dir, b.Path, err)
		}
		if empty {
			if err := removeContents(dir); err != nil {
				return Promotion{}, err
			}
		} else if p.Moved, err = BackupDataDir(dir); err != nil {
			return Promotion{}, err
		}
		return p, moveContents(b.Path, dir)
	}
	return Promotion{}, fmt.Errorf("%s: %w", backup, ErrNotABackup)
}

// DataDirIsEmpty reports whether data directory dir holds no state: no raft
// log entry, term or snapshot, no repository content, no rejoin marker. A
// store that opened its files and never joined or created its group leaves
// such a directory; DataDirHasState, which looks only at the files, counts
// it as having state. The directory's store must not be running.
func DataDirIsEmpty(dir string) (bool, error) {
	if !DataDirHasState(dir) {
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(dir, rejoinFile)); err == nil {
		return false, nil
	}
	if snaps, err := os.ReadDir(filepath.Join(dir, "snapshots")); err == nil && len(snaps) > 0 {
		return false, nil
	}
	if st, err := os.Stat(filepath.Join(dir, "repo.db")); err == nil && st.Size() > 0 {
		c, err := InspectDataDir(dir)
		if err != nil {
			return false, err
		}
		if c.GroupID != "" || c.AppliedIndex > 0 || len(c.Sources) > 0 {
			return false, nil
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil && st.Size() > 0 {
		has, err := raftLogHasState(filepath.Join(dir, "raft.db"))
		if err != nil || has {
			return false, err
		}
	}
	return true, nil
}

// raftLogHasState opens a raft log read-only and reports whether it holds
// an entry or a term.
func raftLogHasState(path string) (has bool, err error) {
	bs, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer bs.Close()
	defer func() {
		if r := recover(); r != nil { // a log without raft's buckets: not one to discard
			has, err = false, fmt.Errorf("read %s: %v", path, r)
		}
	}()
	last, err := bs.LastIndex()
	if err != nil {
		return false, err
	}
	term, err := bs.GetUint64([]byte("CurrentTerm"))
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return false, err
	}
	return last > 0 || term > 0, nil
}

// removeContents removes everything in dir except its lock files.
func removeContents(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if lockFiles[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// moveContents moves everything in src into dst, except lock files, and
// removes src.
func moveContents(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if lockFiles[e.Name()] {
			continue
		}
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("move %s back: %w", e.Name(), err)
		}
	}
	return os.RemoveAll(src)
}

// AcceptLoss marks data directory dir so that its store, at its next start,
// may create its group anew under a new identity although other groups
// remember the group: the operator accepts that the group's messages are
// lost. The mark is removed once used.
func AcceptLoss(dir string) error {
	return atomicfile.Write(filepath.Join(dir, acceptLossFile), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o640)
}
