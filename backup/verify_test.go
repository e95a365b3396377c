package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/repository"
)

// writeGroupRepo builds a repository of group index holding source "s"
// 1..count and receiver "r" at 3, and writes its snapshot stream to path.
func writeGroupRepo(t *testing.T, path string, index, count int) {
	t.Helper()
	r, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var payloads [][]byte
	for i := 1; i <= count; i++ {
		payloads = append(payloads, []byte(fmt.Sprintf("s #%d", i)))
	}
	cmds := [][]byte{
		repository.EncodeInitGroup(repository.InitGroup{GroupID: fmt.Sprintf("id-of-group-%d", index), Index: index, UnixNano: 1}),
		repository.EncodeRegister(repository.Register{Source: "s", Session: "p#1", UnixNano: 2}),
		repository.EncodePublish(repository.Publish{Source: "s", FirstSeq: 1, Payloads: payloads}),
		repository.EncodeRegisterReceiver(repository.RegisterReceiver{Source: "s", Receiver: "r", Session: "q", UnixNano: 3}),
		repository.EncodeConsumed(repository.Consumed{Source: "s", Receiver: "r", Seq: 3, UnixNano: 4}),
		repository.EncodePeerGroup(repository.PeerGroup{Index: 3 - index, GroupID: fmt.Sprintf("id-of-group-%d", 3-index), UnixNano: 5}),
	}
	var entries []repository.Entry
	for i, c := range cmds {
		entries = append(entries, repository.Entry{Index: uint64(i + 1), Term: 1, Data: c})
	}
	res, err := r.Apply(entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range res {
		if x.Err != nil {
			t.Fatalf("entry %d: %v", i+1, x.Err)
		}
	}
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := snap.WriteTo(f); err != nil {
		t.Fatal(err)
	}
}

// writeBackup lays out a backup of two groups in a new directory, as Take
// does.
func writeBackup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m := &Manifest{Format: manifestFormat, BackupID: "b1", Deployment: "test", Taken: "2026-01-01T00:00:00Z", Binary: "test"}
	for index := 1; index <= 2; index++ {
		path := filepath.Join(dir, groupFile(index))
		writeGroupRepo(t, path, index, 10*index)
		g, err := describe(path, index, fmt.Sprintf("G%dS1", index))
		if err != nil {
			t.Fatal(err)
		}
		m.Groups = append(m.Groups, g)
	}
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestVerifyAnIntactBackup(t *testing.T) {
	dir := writeBackup(t)
	m, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Groups[1]
	if g.GroupID != "id-of-group-2" || g.AppliedIndex != 6 || len(g.Sources) != 1 {
		t.Fatalf("group 2 in the manifest: %+v", g)
	}
	s := g.Sources[0]
	if s.Name != "s" || s.HighSeq != 20 || s.LowSeq != 1 || s.Count != 20 || len(s.Receivers) != 1 || s.Receivers[0] != (Receiver{Name: "r", Seq: 3}) {
		t.Fatalf("group 2's source in the manifest: %+v", s)
	}
}

// Each kind of damage is refused, naming the file.
func TestVerifyRefusesDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		file   string
	}{
		{"a flipped byte", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "group-2.umsnap"), 0.5) }, "group-2.umsnap"},
		{"a flipped byte in the header", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "group-1.umsnap"), 0) }, "group-1.umsnap"},
		{"a missing file", func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, "group-1.umsnap")) }, "group-1.umsnap"},
		{"a truncated file", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "group-2.umsnap")) }, "group-2.umsnap"},
		{"a missing manifest", func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, ManifestFile)) }, ManifestFile},
		{"a damaged manifest", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, ManifestFile)) }, ManifestFile},
		{"a flipped byte, the manifest's checksum rewritten to match", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "group-2.umsnap")
			flip(t, path, 0.5)
			resum(t, dir, 1, path)
		}, "group-2.umsnap"},
		{"a file and its checksum replaced together", func(t *testing.T, dir string) {
			// The other group's file, renamed: its size and checksum in
			// the manifest are rewritten, but it holds group 1, not 2.
			b, err := os.ReadFile(filepath.Join(dir, "group-1.umsnap"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "group-2.umsnap"), b, 0o640); err != nil {
				t.Fatal(err)
			}
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			m.Groups[1].Size, m.Groups[1].SHA256 = m.Groups[0].Size, m.Groups[0].SHA256
			if err := m.write(dir); err != nil {
				t.Fatal(err)
			}
		}, "group-2.umsnap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeBackup(t)
			tt.damage(t, dir)
			_, err := Verify(dir)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tt.file) {
				t.Fatalf("Verify = %v, want ErrDamaged naming %s", err, tt.file)
			}
		})
	}
}

func flip(t *testing.T, path string, at float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[int(at*float64(len(b)-1))] ^= 0x01
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// resum rewrites group i's size and checksum in dir's manifest to match
// the file at path, so that only decoding can find the damage.
func resum(t *testing.T, dir string, i int, path string) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Groups[i].SHA256, err = fileSHA256(path); err != nil {
		t.Fatal(err)
	}
	m.Groups[i].Size = st.Size()
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
}
