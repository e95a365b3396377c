package storegroup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"umstore/internal/atomicfile"
)

// Raft's file snapshot store keeps each snapshot's metadata (its index and
// term, the group's configuration, the size and CRC of state.bin) in a
// meta.json that nothing checks: a digit of the index changed by one bit
// at rest is valid JSON, and raft would take the snapshot to stand for
// entries it does not hold (at start it sets its applied index to the
// snapshot's, so the entries in between would never be applied). Two checks
// catch that: the index and term must be those of the snapshot's name
// (raft names it term-index-milliseconds, and a directory's name is not in
// any file's bytes), and the whole file must match the CRC32C that the
// store wrote beside it (metaSumFile) once raft had written it. A snapshot
// without that file (taken by an older umstored, or a crash between raft's
// write and ours) has the first check only.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metaSumFile holds the CRC32C of the snapshot's meta.json, big-endian.
const metaSumFile = "meta.json.crc32c"

// checkMeta compares what a snapshot's meta.json says with its name and
// with the checksum beside it.
func (s *snapshotStore) checkMeta(m *raft.SnapshotMeta) error {
	damaged := func(format string, args ...any) error {
		return inFile(filepath.Join(s.dir, m.ID), fmt.Errorf("%w: snapshot %s: %s", errSnapshotsDamaged, m.ID, fmt.Sprintf(format, args...)))
	}
	term, index, ok := parseSnapshotID(m.ID)
	if !ok {
		return damaged("its meta.json names it %q, not term-index-time", m.ID)
	}
	if term != m.Term || index != m.Index {
		return damaged("its meta.json says term %d index %d, its name term %d index %d", m.Term, m.Index, term, index)
	}
	dir := filepath.Join(s.dir, m.ID)
	sum, err := os.ReadFile(filepath.Join(dir, metaSumFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return damaged("reading %s: %v", metaSumFile, err)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return damaged("reading meta.json: %v", err)
	}
	if len(sum) != 4 || binary.BigEndian.Uint32(sum) != crc32.Checksum(meta, castagnoli) {
		return damaged("meta.json does not match its checksum in %s", metaSumFile)
	}
	return nil
}

// parseSnapshotID reads raft's snapshot name, term-index-milliseconds.
func parseSnapshotID(id string) (term, index uint64, ok bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return 0, 0, false
	}
	term, err1 := strconv.ParseUint(parts[0], 10, 64)
	index, err2 := strconv.ParseUint(parts[1], 10, 64)
	_, err3 := strconv.ParseUint(parts[2], 10, 64)
	return term, index, err1 == nil && err2 == nil && err3 == nil
}

// writeMetaSum writes the checksum of a snapshot raft has just written.
func (s *snapshotStore) writeMetaSum(id string) error {
	dir := filepath.Join(s.dir, id)
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, metaSumFile), binary.BigEndian.AppendUint32(nil, crc32.Checksum(meta, castagnoli)), 0o640)
}

// List implements raft.SnapshotStore: raft's list, each snapshot's meta
// checked. A snapshot whose meta is damaged fails the list, so that the
// store finds its files damaged rather than trust or skip it.
func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	metas, err := s.FileSnapshotStore.List()
	if err != nil {
		return nil, err
	}
	for _, m := range metas {
		if err := s.checkMeta(m); err != nil {
			return nil, err
		}
	}
	return metas, nil
}
