package storegroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"umstore/internal/atomicfile"
	"umstore/internal/boltfile"
	"umstore/internal/wallclock"
)

// A store's damaged files stop that store, never its process: a host runs
// several stores in one process, and one bad file must not take the others
// down with it (on two hosts that would be a group's quorum).
//
//   - Before a file is mapped, it is checked: repo.db and raft.db against
//     their bbolt meta pages (boltfile.Check), and the snapshots against the
//     raft log (checkSnapshotsCoverLog): raft panics with "log not found"
//     when its log was compacted and the snapshot standing for the entries
//     before it is gone.
//   - While the store runs, every read and write of a mapped file is
//     guarded (boltfile.Guarded, in the repository and in the log store): a
//     fault or panic there becomes the store's fatal error, naming the store
//     and the file, and nothing uses the file again. A fault that says the
//     file is damaged (a memory fault: the file shrank, a page cannot be
//     read; or a panic inside bbolt: a page is not what it should be) also
//     leaves a mark, damaged.json, in the data directory, so that the next
//     start treats the files as damaged even if the check cannot see why (a
//     file cut, then grown back with zeros by a write), before bbolt's open
//     could panic on it where nothing can recover.
//   - Damage found at open, or marked, moves the data directory's files to a
//     numbered backup (BackupDataDir); the store rejoins its group empty,
//     through the staged join and the vote gate, as a wiped store does.

// damageMarkFile records a memory fault on one of the store's files.
const damageMarkFile = "damaged.json"

var (
	// errSnapshotsDamaged: the raft log starts after entries that only a
	// snapshot can stand for, and that snapshot is missing or unreadable.
	errSnapshotsDamaged = errors.New("the raft log needs a snapshot that is missing or unreadable")
	// errMarkedDamaged: a memory fault while the store ran marked its files
	// damaged (damageMarkFile).
	errMarkedDamaged = errors.New("a fault reading the store's files while it ran marked them damaged")
)

type damageMark struct {
	File     string `json:"file"`
	Error    string `json:"error"`
	UnixNano int64  `json:"unix_nano"`
}

func writeDamageMark(dir, file string, cause error) error {
	b, _ := json.Marshal(damageMark{File: file, Error: cause.Error(), UnixNano: wallclock.Now().UnixNano()})
	return atomicfile.Write(filepath.Join(dir, damageMarkFile), b, 0o640)
}

// readDamageMark returns an error wrapping errMarkedDamaged, naming the
// faulted file, if the data directory is marked damaged.
func readDamageMark(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, damageMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", damageMarkFile, err)
	}
	var m damageMark
	if json.Unmarshal(b, &m) != nil || m.File == "" {
		m.File, m.Error = filepath.Join(dir, damageMarkFile), "the mark itself is unreadable"
	}
	when := time.Unix(0, m.UnixNano).UTC().Format(time.RFC3339)
	return inFile(m.File, fmt.Errorf("%w: %s at %s: %s", errMarkedDamaged, m.File, when, m.Error))
}

// fileError names the file an error of opening a store's files is about.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

func inFile(file string, err error) error {
	if err == nil {
		return nil
	}
	return &fileError{file: file, err: err}
}

// fileOf returns the file an error names (inFile), or "".
func fileOf(err error) string {
	var fe *fileError
	if errors.As(err, &fe) {
		return fe.file
	}
	return ""
}

// fileFaulted returns the OnFault of one of the store's guarded files: a
// running store stops with an error naming itself, the file and what the
// operator can do, and a fault that says the file is damaged (a memory
// fault, a panic inside bbolt) also marks the files damaged, before the
// store lets go of its data directory. During Open the store is not running
// yet: the call that faulted returns the error, Open handles it.
func (s *Store) fileFaulted(file string) func(error) {
	return func(err error) {
		var f *boltfile.Fault
		damaged := errors.As(err, &f) && f.Damaged()
		if f != nil && !f.Memory() {
			s.log.Error("panic while using a file of the store", "file", file, "in_bbolt", f.InBBolt, "stack", string(f.Stack))
		}
		s.fileFailed(file, err, damaged)
	}
}

// fileFailed stops the store on an error of one of its files; damaged
// says the file is damaged (a memory fault, a panic inside bbolt, an entry
// that cannot be decoded), and marks the files so that the next start
// moves them aside.
func (s *Store) fileFailed(file string, err error, damaged bool) {
	mark := func() {}
	if damaged {
		mark = func() {
			if werr := writeDamageMark(s.cfg.DataDir, file, err); werr != nil {
				s.log.Error("could not mark the store's files damaged; if it faults again after a restart, move its data directory aside", "file", file, "err", werr)
			}
		}
	}
	if !s.running.Load() {
		mark()
		return
	}
	if !damaged {
		advice := fmt.Sprintf("start it again; if it stops the same way, %s is likely damaged: stop umstored, move the data directory %s aside and start again, the store rejoins its group empty", file, s.cfg.DataDir)
		s.failThen(fmt.Errorf("store %s stopped: %w; the other stores of this process go on serving: %s", s.cfg.Name, err, advice), mark)
		return
	}
	advice := "start it again (umstored does, a few times): it moves its files to a numbered backup and rejoins its group empty"
	s.failThen(fmt.Errorf("store %s stopped: %w; %w; the other stores of this process go on serving: %s", s.cfg.Name, err, ErrFilesMarkedDamaged, advice), mark)
}

// failThen is fail (stop.go) with then run before the store closes, while
// it still holds its data directory.
func (s *Store) failThen(err error, then func()) {
	if !s.failed.CompareAndSwap(nil, &err) {
		then() // another error stops the store already
		return
	}
	s.log.Error("store stopping itself", "err", err)
	go func() {
		then()
		s.Close()
	}()
}

// checkSnapshotsCoverLog refuses, as damage, a raft log that starts after
// index 1 when no readable snapshot stands for the entries before it (the
// snapshots were deleted, or their metadata garbled): raft would panic on
// the first entry it cannot find. It runs before raft starts.
func (s *Store) checkSnapshotsCoverLog() error {
	dir := filepath.Join(s.cfg.DataDir, "snapshots")
	first, err := s.logStore.FirstIndex()
	if err != nil {
		return inFile(s.logStore.file.Path, fmt.Errorf("read the raft log of store %s: %w", s.cfg.Name, err))
	}
	if first <= 1 {
		return nil // the log starts at the beginning (or is empty): it needs no snapshot
	}
	damaged := func(format string, args ...any) error {
		return inFile(dir, fmt.Errorf("store %s: %w: %s: the raft log starts at index %d, %s", s.cfg.Name, errSnapshotsDamaged, dir, first, fmt.Sprintf(format, args...)))
	}
	metas, err := s.snaps.List()
	if err != nil {
		return damaged("and the snapshots cannot be listed: %v", err)
	}
	if len(metas) == 0 {
		return damaged("but there is no readable snapshot for the entries before it (deleted, or its meta.json garbled)")
	}
	latest := metas[0] // raft uses the latest it can read
	if latest.Index+1 < first {
		return damaged("but the latest readable snapshot, %s, ends at index %d", latest.ID, latest.Index)
	}
	_, rc, err := s.snaps.FileSnapshotStore.Open(latest.ID) // reads it whole and checks its CRC
	if err != nil {
		return damaged("but its snapshot %s cannot be read: %v", latest.ID, err)
	}
	return rc.Close()
}

// checkLogHoldsRefs refuses, as damage, a raft log that no longer holds
// every entry the repository's messages refer to (a log cut short, a torn
// tail the repository had already indexed, a segment removed): those
// messages could not be read. raft-wal cuts a torn tail at open by its
// batch CRCs; this is what finds it if the repository saw the lost entries
// first. It runs before raft starts.
func (s *Store) checkLogHoldsRefs() error {
	low, high, err := s.repo.LogRefRange()
	if err != nil || low == 0 {
		return err
	}
	first, err := s.logStore.FirstIndex()
	if err != nil {
		return inFile(s.logStore.file.Path, fmt.Errorf("read the raft log of store %s: %w", s.cfg.Name, err))
	}
	last, err := s.logStore.LastIndex()
	if err != nil {
		return inFile(s.logStore.file.Path, fmt.Errorf("read the raft log of store %s: %w", s.cfg.Name, err))
	}
	if first == 0 || low < first || high > last {
		return inFile(s.logStore.file.Path, fmt.Errorf("store %s: %w: the repository refers to raft log entries %d..%d, the log holds %d..%d", s.cfg.Name, errLogDamaged, low, high, first, last))
	}
	return nil
}
