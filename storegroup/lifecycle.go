package storegroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"umstore/internal/atomicfile"
	"umstore/internal/boltfile"
	"umstore/internal/wallclock"
	"umstore/repository"
)

// cleanFile marks a store stopped cleanly: written on a graceful stop after
// raft and the repository are closed (everything applied is durable), and
// removed when the store opens again. A store that finds no marker at open
// was stopped dirty (a crash, kill -9, power loss) or is new.
const cleanFile = "clean.json"

// Last stop of a store, as Status reports it.
const (
	StopClean = "clean" // stopped gracefully
	StopDirty = "dirty" // crashed or killed: raft replays from its log
	StopNew   = "new"   // a new or wiped data directory
)

type cleanMarker struct {
	AppliedIndex  uint64 `json:"applied_index"`
	StoppedUnixNs int64  `json:"stopped_unix_nano"`
}

// readLastStop tells how the store stopped last time and removes the mark:
// from now on, until the next graceful stop, the store is dirty.
func readLastStop(dir string) (string, error) {
	path := filepath.Join(dir, cleanFile)
	_, err := os.Stat(path)
	switch {
	case err == nil:
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("clear the clean-stop mark: %w", err)
		}
		return StopClean, atomicfile.SyncDir(dir)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	for _, f := range []string{raftDBFile, walDir, "repo.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return StopDirty, nil
		}
	}
	return StopNew, nil
}

func writeClean(dir string, applied uint64) error {
	b, _ := json.Marshal(cleanMarker{AppliedIndex: applied, StoppedUnixNs: wallclock.Now().UnixNano()})
	return atomicfile.Write(filepath.Join(dir, cleanFile), b, 0o640)
}

// lockFiles are the data directory's lock files: they stay when the
// directory's content is moved to a backup.
var lockFiles = map[string]bool{"LOCK": true, "LOCK.info": true, "LEASE": true}

// backupPrefix returns "<dir>.bak." : backups of a store's data directory
// are <store dir>.bak.0001, .0002, ... (higher is newer).
func backupPrefix(dir string) string { return filepath.Clean(dir) + ".bak." }

// BackupDataDir moves everything in dir except its lock files into the
// next numbered backup beside it, and returns the backup's path. Nothing is
// deleted: an operator can inspect or promote the backup later (see
// `umstored recover`).
func BackupDataDir(dir string) (string, error) {
	backups, err := ListBackups(dir)
	if err != nil {
		return "", err
	}
	n := 1
	if len(backups) > 0 {
		n = backups[len(backups)-1].Number + 1
	}
	dst := fmt.Sprintf("%s%04d", backupPrefix(dir), n)
	if err := os.Mkdir(dst, 0o750); err != nil {
		return "", fmt.Errorf("create backup %s: %w", dst, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if lockFiles[e.Name()] {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return "", fmt.Errorf("move %s into backup %s: %w", e.Name(), dst, err)
		}
	}
	if err := atomicfile.SyncDir(dst); err != nil {
		return "", err
	}
	return dst, atomicfile.SyncDir(dir)
}

// Backup is one numbered backup of a store's data directory.
type Backup struct {
	Path   string
	Number int
	Time   time.Time // when it was taken
}

// ListBackups lists the numbered backups of the store whose data directory
// is dir, oldest first.
func ListBackups(dir string) ([]Backup, error) {
	prefix := backupPrefix(dir)
	entries, err := os.ReadDir(filepath.Dir(prefix))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []Backup
	base := filepath.Base(prefix)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), base))
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, Backup{Path: filepath.Join(filepath.Dir(prefix), e.Name()), Number: n, Time: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// BackupContent is what a backup (or a data directory) holds.
type BackupContent struct {
	GroupID      string
	GroupIndex   int
	AppliedIndex uint64
	Sources      []repository.SourceInfo
}

// InspectDataDir opens the repository in dir, read for inspection, and says
// what it holds. The directory must not be in use by a running store.
func InspectDataDir(dir string) (BackupContent, error) {
	path := filepath.Join(dir, "repo.db")
	if _, err := os.Stat(path); err != nil {
		return BackupContent{}, fmt.Errorf("%s holds no repository: %w", dir, err)
	}
	r, err := repository.Open(path, repository.Options{LockTimeout: time.Second})
	if err != nil {
		return BackupContent{}, err
	}
	defer r.Close()
	srcs, err := r.Sources()
	if err != nil {
		return BackupContent{}, err
	}
	return BackupContent{GroupID: r.GroupID(), GroupIndex: r.GroupIndex(), AppliedIndex: r.AppliedIndex(), Sources: srcs}, nil
}

// isDamage reports whether an error opening a store's files means the
// files are damaged (as opposed to locked, missing permissions, ...): bbolt
// or the repository refuses a file, a file is shorter than its meta pages
// say or faulted when read (boltfile.ErrDamaged), the snapshots the raft
// log needs are gone, or a fault while the store ran marked the files.
func isDamage(err error) bool {
	if errors.Is(err, repository.ErrNewerFormat) {
		return false // a newer umstored's file: refused as it is, not moved aside
	}
	return errors.Is(err, repository.ErrFormat) || errors.Is(err, berrors.ErrInvalid) ||
		errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) ||
		errors.Is(err, boltfile.ErrDamaged) || errors.Is(err, errSnapshotsDamaged) || errors.Is(err, errMarkedDamaged) ||
		errors.Is(err, errLogDamaged)
}

// checkIdentity compares the store's group identity with the one the rest
// of its group holds. If every other member answers with state and they
// agree on another identity, this store's files belong to some other group
// (a restored or copied directory): they are moved to a numbered backup and
// the store rejoins empty. Silent members make the check inconclusive and
// the store starts as it is.
func (s *Store) checkIdentity(ctx context.Context) error {
	mine := s.repo.GroupID()
	if mine == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	theirs := ""
	for _, a := range s.probe(ctx, s.otherMembers()) {
		if a.err != nil || !a.hasState() || a.reply.GroupID == "" {
			return nil
		}
		if theirs != "" && a.reply.GroupID != theirs {
			return nil // the others disagree among themselves: not for us to judge
		}
		theirs = a.reply.GroupID
	}
	if theirs == "" || theirs == mine {
		return nil
	}
	if from := RestoredFrom(mine); from != "" && from == ownID(theirs) {
		// A restored store among the stores of the group it was copied
		// from: neither may take the other for a member (restore.go).
		return fmt.Errorf("store %s was restored from a backup of group identity %s (it is %s now), and the other members of its group still hold that group: a restored group never joins or replaces the group it came from; stop those stores and restore every store of the group (umstored restore on each host), or move this data directory aside", s.cfg.Name, theirs, mine)
	}
	s.closeStorage()
	s.repo, s.logStore = nil, nil
	backup, err := BackupDataDir(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("store %s holds group %s but its group is %s; moving its files to a backup failed: %w", s.cfg.Name, mine, theirs, err)
	}
	s.log.Error("this store's files belong to another group identity than its group's: moved them to a numbered backup; the store rejoins empty",
		"store_group_id", mine, "group_id", theirs, "backup", backup)
	s.lastStop = StopNew
	return s.openFiles()
}
