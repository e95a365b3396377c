package publisher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"umstore/internal/atomicfile"
)

// stateFile is the publisher's optional local memory of a source: the last
// sequence number it was told was stable and the identities of the groups
// it registered with. A restarted publisher resumes past LastStable even if
// the groups that hold it cannot be reached, and notices a group that was
// re-created (a new identity: its history is gone).
type stateFile struct {
	Source        string         `json:"source"`
	LastStable    uint64         `json:"last_stable"`
	Groups        map[int]string `json:"groups"` // group index -> identity
	UpdatedUnixNs int64          `json:"updated_unix_nano"`
	// Session is the publisher's session identity and Epoch its latest
	// incarnation's (see Config.Session); absent in files written before
	// sessions had incarnations.
	Session string `json:"session,omitempty"`
	Epoch   uint64 `json:"epoch,omitempty"`
	// Settled says that no group holds, or will receive, a message of this
	// source above LastStable from any incarnation of this publisher:
	// written by a Close that found every message it had sent stable, in an
	// incarnation whose own resume point was past everything sent before
	// it (every group answered its registration, or its predecessor's file
	// was settled). A publisher started from a settled file may resume as
	// soon as enough groups answer, without waiting for the others: none
	// of them can hold a number it would reuse. New clears it in the file
	// before registering.
	Settled bool `json:"settled,omitempty"`
	// SentUpTo bounds what any incarnation of this publisher may have sent:
	// no message leaves before the file says so (reserve.go). Absent in
	// files written before the bound was kept.
	SentUpTo uint64 `json:"sent_up_to,omitempty"`
}

// copy returns a copy of st that shares nothing with it.
func (st *stateFile) copy() *stateFile {
	c := *st
	c.Groups = make(map[int]string, len(st.Groups))
	for k, v := range st.Groups {
		c.Groups[k] = v
	}
	return &c
}

func readStateFile(path, source string) (*stateFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read publisher state file: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("publisher state file %s is damaged (%v); move it away to start without it", path, err)
	}
	if st.Source != source {
		return nil, fmt.Errorf("publisher state file %s belongs to source %q, not %q; use one state file per source", path, st.Source, source)
	}
	return &st, nil
}

// write replaces the file atomically and durably.
func (st *stateFile) write(path string) error {
	st.UpdatedUnixNs = time.Now().UnixNano()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o640); err != nil {
		return fmt.Errorf("write publisher state file: %w", err)
	}
	return nil
}
