package repository

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Staging a snapshot stream as it arrives.
//
// Raft stores a snapshot it receives whole (its snapshot store's file)
// before it asks the FSM to restore it, so restoring the stream afterwards
// writes every payload twice. Stage writes the stream straight into a new
// repository file beside the live one while it arrives; the snapshot store
// then keeps only a small marker naming that file (StagedMarker), and
// Restore of the marker puts the staged file in place. The staged file
// stays until it is installed or a later one replaces it (RemoveStaged), so
// a store that crashes in between installs it at its next start.

// stagedInfix names staged files: <repo>.staged-<random>.
const stagedInfix = ".staged-"

// stagedMagic starts a marker: the magic, the applied index of the staged
// repository (uint64 big-endian), then the staged file's base name.
const stagedMagic = "UMSTAGED"

// IsStreamMagic reports whether head (at least 8 bytes) starts a snapshot
// stream Stage can take.
func IsStreamMagic(head []byte) bool {
	return len(head) >= len(streamMagic2) && string(head[:len(streamMagic2)]) == streamMagic2
}

// Stage reads a snapshot stream (as Snapshot.WriteTo writes it) from rd and
// writes the repository it carries into a new file beside the repository,
// synced and checked as Restore would. It returns the marker that Restore
// installs it from. A stream that is not sound leaves nothing behind.
func (r *Repo) Stage(rd io.Reader) (marker []byte, err error) {
	var magic [8]byte
	if _, err := io.ReadFull(rd, magic[:]); err != nil {
		return nil, fmt.Errorf("stage a snapshot: %w: stream too short for its header: %v", ErrFormat, err)
	}
	if !IsStreamMagic(magic[:]) {
		return nil, fmt.Errorf("stage a snapshot: %w: not a stream that can be staged", ErrFormat)
	}
	tmp, _, index, err := r.buildFromStream(rd)
	if err != nil {
		return nil, fmt.Errorf("stage a snapshot: %w", err)
	}
	dir, base := filepath.Split(r.path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+stagedInfix+"*")
	if err == nil {
		f.Close()
		err = os.Rename(tmp, f.Name())
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		if f != nil {
			os.Remove(f.Name())
		}
		return nil, fmt.Errorf("stage a snapshot: %w", err)
	}
	m := binary.BigEndian.AppendUint64([]byte(stagedMagic), index)
	return append(m, filepath.Base(f.Name())...), nil
}

// StagedMarker reports whether head starts a marker written by Stage, the
// applied index the staged repository stands for, and whether the file it
// names still exists beside the repository (it does not once installed).
func (r *Repo) StagedMarker(head []byte) (marker bool, index uint64, present bool) {
	path, ok := r.stagedPath(head)
	if !ok {
		return false, 0, false
	}
	_, err := os.Stat(path)
	return true, binary.BigEndian.Uint64(head[len(stagedMagic):]), err == nil
}

// DiscardStaged removes the file a marker names, if it is still there.
func (r *Repo) DiscardStaged(marker []byte) {
	if path, ok := r.stagedPath(marker); ok {
		os.Remove(path)
	}
}

// stagedPath returns the path a marker names, refusing names that are not
// staged files of this repository.
func (r *Repo) stagedPath(marker []byte) (string, bool) {
	if !bytes.HasPrefix(marker, []byte(stagedMagic)) || len(marker) < len(stagedMagic)+8 {
		return "", false
	}
	name := string(marker[len(stagedMagic)+8:])
	if name != filepath.Base(name) || !strings.HasPrefix(name, filepath.Base(r.path)+stagedInfix) {
		return "", false
	}
	return filepath.Join(filepath.Dir(r.path), name), true
}

// errStagedGone: the marker's staged file is missing.
var errStagedGone = errors.New("the staged snapshot file is missing")

// installable returns the staged file a marker names, checked as a
// received file is: a complete repository of this group.
func (r *Repo) installable(marker []byte) (string, error) {
	path, ok := r.stagedPath(marker)
	if !ok {
		return "", fmt.Errorf("%w: a snapshot marker names no staged file of %s", ErrFormat, r.path)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w: %w: %s", ErrFormat, errStagedGone, path)
	}
	db, err := openDB(path, r.opts, true)
	if err != nil {
		return "", err
	}
	var group string
	err = db.View(func(tx *bolt.Tx) error { group = readGroup(tx.Bucket(bucketMeta)).id; return nil })
	db.Close()
	if err != nil {
		return "", err
	}
	if cur := r.GroupID(); cur != "" && group != cur {
		return "", fmt.Errorf("%w: the staged snapshot holds group %q, this repository group %q", ErrGroupMismatch, group, cur)
	}
	return path, nil
}

// RemoveStaged deletes staged files beside the repository, but the one the
// marker keep names (nil: all of them).
func (r *Repo) RemoveStaged(keep []byte) {
	keepPath, _ := r.stagedPath(keep)
	dir, base := filepath.Split(r.path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), base+stagedInfix) && p != keepPath {
			os.Remove(p)
		}
	}
}
