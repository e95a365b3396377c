package storegroup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A snapshot's meta.json damaged at rest is found when the snapshots are
// listed or opened, never believed: raft would otherwise set its applied
// index to a flipped one and skip the entries in between.
func TestDamagedSnapshotMetaIsFound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string) // the snapshot's directory
		damaged bool
	}{
		{"intact", func(*testing.T, string) {}, false},
		{"checksum file missing (an older umstored's snapshot)", removeMetaSum, false},
		{"index flipped, still valid JSON", flipMeta(`"Index":3`, `"Index":2`), true},
		{"index flipped, no checksum file", func(t *testing.T, dir string) {
			removeMetaSum(t, dir)
			flipMeta(`"Index":3`, `"Index":2`)(t, dir)
		}, true},
		{"configuration index flipped", flipMeta(`"ConfigurationIndex":1`, `"ConfigurationIndex":3`), true},
		{"checksum file damaged", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, metaSumFile), []byte{1, 2, 3, 4}, 0o640); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSnapFixture(t)
			f.publish(1, 100)
			f.publish(101, 100)
			f.publish(201, 100)
			id := f.persist(f.index, &refSnapshot{index: f.repo.AppliedIndex(), term: f.repo.AppliedTerm()})
			dir := filepath.Join(f.store.dir, id)
			if _, err := os.Stat(filepath.Join(dir, metaSumFile)); err != nil {
				t.Fatalf("no checksum beside the new snapshot's meta.json: %v", err)
			}
			tc.damage(t, dir)

			_, listErr := f.store.List()
			_, _, _, _, openErr := f.store.open(id)
			for what, err := range map[string]error{"List": listErr, "Open": openErr} {
				if got := errors.Is(err, errSnapshotsDamaged); got != tc.damaged {
					t.Errorf("%s: %v; damaged %v, want %v", what, err, got, tc.damaged)
				}
				if tc.damaged && fileOf(err) != dir {
					t.Errorf("%s: the error names %q, want the snapshot %s", what, fileOf(err), dir)
				}
			}
		})
	}
}

func removeMetaSum(t *testing.T, dir string) {
	if err := os.Remove(filepath.Join(dir, metaSumFile)); err != nil {
		t.Fatal(err)
	}
}

// flipMeta replaces from with to in meta.json, as one flipped bit would
// (the callers' pairs differ in one bit).
func flipMeta(from, to string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		path := filepath.Join(dir, "meta.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(from)) {
			t.Fatalf("%s does not hold %s: %s", path, from, b)
		}
		if err := os.WriteFile(path, bytes.Replace(b, []byte(from), []byte(to), 1), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}
