package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"umstore/repository"
)

// ErrDamaged means a backup's manifest or one of its files is damaged,
// missing or not what the manifest says; the error names the file.
var ErrDamaged = errors.New("backup damaged")

// Verify checks the backup in dir: its manifest, and for each group's file
// its size, its SHA-256, and that it decodes into a repository standing for
// the manifest's applied index and group identity. The first damage found
// is returned, naming the file.
func Verify(dir string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	for _, g := range m.Groups {
		if err := verifyGroup(dir, g); err != nil {
			return m, fmt.Errorf("%w: %w", ErrDamaged, err)
		}
	}
	return m, nil
}

func verifyGroup(dir string, g Group) error {
	path := filepath.Join(dir, g.File)
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s (group %d): %w", path, g.Index, err)
	}
	if st.Size() != g.Size {
		return fmt.Errorf("%s (group %d): %d bytes, the manifest says %d", path, g.Index, st.Size(), g.Size)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("%s (group %d): %w", path, g.Index, err)
	}
	if sum != g.SHA256 {
		return fmt.Errorf("%s (group %d): SHA-256 %s, the manifest says %s", path, g.Index, sum, g.SHA256)
	}
	got, err := decode(path)
	if err != nil {
		return fmt.Errorf("%s (group %d): does not decode as a repository: %w", path, g.Index, err)
	}
	if got.AppliedIndex != g.AppliedIndex || got.GroupID != g.GroupID {
		return fmt.Errorf("%s (group %d): holds group %s at index %d, the manifest says %s at %d", path, g.Index, got.GroupID, got.AppliedIndex, g.GroupID, g.AppliedIndex)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// decoded is what a group's file holds, read back from a repository built
// from it.
type decoded struct {
	GroupID      string
	AppliedIndex uint64
	AppliedTerm  uint64
	Sources      []Source
}

// decode restores the stream in path into a scratch repository (which
// checks every record and message of it) and reads what it holds.
func decode(path string) (decoded, error) {
	tmp, err := os.MkdirTemp("", "umstore-backup-check-")
	if err != nil {
		return decoded{}, err
	}
	defer os.RemoveAll(tmp)
	f, err := os.Open(path)
	if err != nil {
		return decoded{}, err
	}
	defer f.Close()
	r, err := repository.Open(filepath.Join(tmp, "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		return decoded{}, err
	}
	defer r.Close()
	if err := r.Restore(f); err != nil {
		return decoded{}, err
	}
	out := decoded{GroupID: r.GroupID(), AppliedIndex: r.AppliedIndex(), AppliedTerm: r.AppliedTerm()}
	srcs, err := r.Sources()
	if err != nil {
		return decoded{}, err
	}
	for _, s := range srcs {
		src := Source{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count}
		rcvs, err := r.Receivers(s.Name)
		if err != nil {
			return decoded{}, err
		}
		for _, p := range rcvs {
			src.Receivers = append(src.Receivers, Receiver{Name: p.Receiver, Seq: p.Seq})
		}
		out.Sources = append(out.Sources, src)
	}
	return out, nil
}
