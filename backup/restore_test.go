package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
	"umstore/repository"
	"umstore/storegroup"
)

// RestoreHost lays out a host's stores of a deployment: each holds its
// group's backup under the restored identity, remembers the other group
// under its restored identity, and holds no session of the old
// deployment. It never writes over a store's state.
func TestRestoreHostLaysOutItsStores(t *testing.T) {
	dir := writeBackup(t)
	d := placement.Dev("127.0.0.1", 30000)
	data := t.TempDir()
	stores, err := RestoreHost(dir, d, "A", data, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(stores) != 3 {
		t.Fatalf("restored %d stores on host A, want G1S1 G1S2 G2S1: %+v", len(stores), stores)
	}
	want := map[int]string{1: storegroup.RestoredGroupID("b1", "id-of-group-1"), 2: storegroup.RestoredGroupID("b1", "id-of-group-2")}
	for _, s := range stores {
		if s.GroupID != want[s.Group] || s.From != "id-of-group-"+string(rune('0'+s.Group)) || s.AppliedIndex != 6 {
			t.Errorf("%s: %+v", s.Store, s)
		}
		r, err := repository.Open(filepath.Join(s.DataDir, "repo.db"), repository.Options{})
		if err != nil {
			t.Fatal(err)
		}
		peers, _ := r.PeerGroups()
		src, _, _ := r.Source("s")
		rcv, _, _, _ := r.Receiver("s", "r")
		id := r.GroupID()
		r.Close()
		if id != want[s.Group] || peers[3-s.Group] != want[3-s.Group] {
			t.Errorf("%s holds identity %s remembering %v, want %s remembering %s", s.Store, id, peers, want[s.Group], want[3-s.Group])
		}
		if src.Session != "" || rcv.Active || rcv.Seq != 3 {
			t.Errorf("%s: source session %q, receiver %+v: want the old sessions freed, the position kept", s.Store, src.Session, rcv)
		}
	}
	if _, err := RestoreHost(dir, d, "A", data, ""); err == nil || !strings.Contains(err.Error(), "already holds a store's state") {
		t.Fatalf("a second restore over the restored stores: %v, want a refusal", err)
	}
}

func TestRestoreHostRefusesADamagedBackup(t *testing.T) {
	dir := writeBackup(t)
	flip(t, filepath.Join(dir, "group-2.umsnap"), 0.5)
	data := filepath.Join(t.TempDir(), "data")
	_, err := RestoreHost(dir, placement.Dev("127.0.0.1", 30000), "B", data, "")
	if err == nil || !strings.Contains(err.Error(), "group-2.umsnap") {
		t.Fatalf("restore of a damaged backup: %v, want a refusal naming group-2.umsnap", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("restore of a damaged backup wrote %s", data)
	}
}
