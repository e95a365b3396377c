package storegroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"umstore/internal/atomicfile"
	"umstore/internal/wallclock"
	"umstore/storegroup/raftport"
)

// rejoinFile marks a store that joined its group empty and has not caught
// up yet. It outlives a crash: a store restarted half-way through catching
// up has a partial log, which is just as unsafe to vote with as an empty one.
const rejoinFile = "rejoin.json"

// rejoinMarker is the content of rejoinFile.
type rejoinMarker struct {
	// Target is the log position this store must reach before it votes
	// freely: the leader's (or the most up-to-date member's) last entry
	// when the store joined.
	Target raftport.Position `json:"target"`
	// From names the member whose answer set Target.
	From string `json:"from"`
	// SinceUnixNano is when the store joined.
	SinceUnixNano int64 `json:"since_unix_nano"`
}

func readRejoin(dir string) (*rejoinMarker, error) {
	b, err := os.ReadFile(filepath.Join(dir, rejoinFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m rejoinMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): the store was rejoining its group; delete its data directory to rejoin from scratch", filepath.Join(dir, rejoinFile), err)
	}
	return &m, nil
}

// writeRejoin writes the marker durably (temp file, fsync, rename, fsync dir).
func writeRejoin(dir string, m rejoinMarker) error {
	if m.SinceUnixNano == 0 {
		m.SinceUnixNano = wallclock.Now().UnixNano()
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, rejoinFile), b, 0o640)
}

func removeRejoin(dir string) error {
	if err := os.Remove(filepath.Join(dir, rejoinFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(dir)
}
