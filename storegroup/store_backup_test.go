package storegroup_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
)

// A store whose repository file is damaged moves its files to a numbered
// backup (nothing is deleted), rejoins empty and catches up.
func TestDamagedStoreIsBackedUpAndRejoins(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	publishRange(t, c, "b", 300, 10)
	victim := c.Members(1)[2].Name
	c.Stop(victim)
	repo := filepath.Join(c.DataDir(victim), "repo.db")
	f, err := os.OpenFile(repo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 8192)
	for i := range garbage {
		garbage[i] = 0xA5
	}
	f.WriteAt(garbage, 0)
	f.Close()

	s := c.StartStore(victim)
	if got := s.Status().LastStop; got != storegroup.StopNew {
		t.Fatalf("last stop after the damaged files were moved away = %q, want %q", got, storegroup.StopNew)
	}
	backups, err := storegroup.ListBackups(c.DataDir(victim))
	if err != nil || len(backups) != 1 {
		t.Fatalf("backups: %v, %v; want one", backups, err)
	}
	if b, err := os.ReadFile(filepath.Join(backups[0].Path, "repo.db")); err != nil || b[0] != 0xA5 {
		t.Fatalf("the damaged file is not in the backup: %v", err)
	}
	c.Eventually(30*time.Second, victim+" catches up", func() bool { return highSeq(t, s, "b") == 300 && !s.Status().CatchingUp })
	sameDigests(t, c)
}

// A store whose data directory holds another group's state (a wrong copy
// or restore) is backed up and rejoins its real group.
func TestStoreOfAnotherGroupIdentityIsBackedUp(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	other := clustertest.Start(t, 1, nil)
	publishRange(t, c, "mine", 100, 10)
	publishRange(t, other, "theirs", 50, 10)
	victim := c.Members(1)[1].Name
	c.Stop(victim)
	other.Stop(victim)
	if err := os.RemoveAll(c.DataDir(victim)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", other.DataDir(victim), c.DataDir(victim)).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	wantID := c.GroupID(1, 30*time.Second)
	s := c.StartStore(victim)
	if got := s.Repository().GroupID(); got == other.GroupID(1, 30*time.Second) {
		t.Fatalf("%s kept the other group's identity", victim)
	}
	backups, _ := storegroup.ListBackups(c.DataDir(victim))
	if len(backups) != 1 {
		t.Fatalf("backups: %v; want one holding the foreign state", backups)
	}
	content, err := storegroup.InspectDataDir(backups[0].Path)
	if err != nil || len(content.Sources) != 1 || content.Sources[0].Name != "theirs" {
		t.Fatalf("backup content %+v, %v", content, err)
	}
	c.Eventually(30*time.Second, victim+" rejoins its group", func() bool {
		return s.Repository().GroupID() == wantID && highSeq(t, s, "mine") == 100
	})
}

// A store stopped gracefully reports a clean last stop; one killed, dirty.
func TestCleanAndDirtyStops(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	names := c.Members(1)
	if got := c.Store(names[0].Name).Status().LastStop; got != storegroup.StopNew {
		t.Fatalf("a new store's last stop = %q", got)
	}
	c.Stop(names[0].Name) // graceful
	c.Kill(names[1].Name) // crash
	if got := c.StartStore(names[0].Name).Status().LastStop; got != storegroup.StopClean {
		t.Fatalf("after a graceful stop: %q, want clean", got)
	}
	if got := c.StartStore(names[1].Name).Status().LastStop; got != storegroup.StopDirty {
		t.Fatalf("after a kill: %q, want dirty", got)
	}
}
