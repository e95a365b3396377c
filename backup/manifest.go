package backup

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"umstore/internal/atomicfile"
	"umstore/placement"
)

// ManifestFile is the manifest's name in a backup directory.
const ManifestFile = "manifest.json"

// manifestFormat is the manifest's format version; Read refuses others.
const manifestFormat = 1

// Manifest says what a backup holds.
type Manifest struct {
	Format     int    `json:"format"`
	BackupID   string `json:"backup_id"`  // random, names this backup (restored identities derive from it)
	Deployment string `json:"deployment"` // the deployment's name
	Taken      string `json:"taken"`      // RFC 3339, UTC, when the backup finished
	Binary     string `json:"binary"`     // the umstored that took it (--version's first line)
	// Policy is the deployment's policy (retention among it) when the
	// backup was taken.
	Policy placement.Policy `json:"policy"`
	Groups []Group          `json:"groups"`
}

// Group is one group's file of a backup.
type Group struct {
	Index        int    `json:"index"`
	GroupID      string `json:"group_id"`
	Store        string `json:"store"` // the leader that sent it
	AppliedIndex uint64 `json:"applied_index"`
	AppliedTerm  uint64 `json:"applied_term"`
	File         string `json:"file"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	// Sources is what the group holds of each source.
	Sources []Source `json:"sources"`
}

// Source is what a group's backup holds of one source.
type Source struct {
	Name      string     `json:"name"`
	HighSeq   uint64     `json:"high_seq"`
	LowSeq    uint64     `json:"low_seq"`
	Count     uint64     `json:"count"`
	Receivers []Receiver `json:"receivers,omitempty"`
}

// Receiver is a durable receiver's position in a source.
type Receiver struct {
	Name string `json:"name"`
	Seq  uint64 `json:"seq"`
}

// groupFile is the name of group index's file in a backup.
func groupFile(index int) string { return fmt.Sprintf("group-%d.umsnap", index) }

// write writes m into dir.
func (m *Manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o640)
}

// ReadManifest reads the manifest of the backup in dir.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is %s a backup taken with umstored backup?)", path, err, dir)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: damaged: %w", path, err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("%s: manifest format %d, this umstored reads %d", path, m.Format, manifestFormat)
	}
	if m.BackupID == "" || len(m.Groups) == 0 {
		return nil, fmt.Errorf("%s: damaged: no backup id or no group", path)
	}
	for _, g := range m.Groups {
		if g.File != groupFile(g.Index) || g.GroupID == "" {
			return nil, fmt.Errorf("%s: damaged: group %d names file %q and identity %q", path, g.Index, g.File, g.GroupID)
		}
	}
	return &m, nil
}
