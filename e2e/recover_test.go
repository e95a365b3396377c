package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every store of group 1 loses its disk while group 2 remembers group 1:
// group 1's stores refuse to start it again from nothing; an operator lists
// the backups, promotes one with umstored recover, restarts the host, and
// the group comes back with its messages.
func TestRecoverPromotesABackup(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	a, b, deploy := d.a, d.b, d.deploy
	d.startAll(t)
	publishJSON(t, bin, deploy, "r", 200)
	waitFor(t, 30*time.Second, "group 2 remembers group 1's identity", func() bool {
		sts, err := b.status()
		if err != nil {
			return false
		}
		for _, s := range sts {
			if s.Name == "G2S2" && s.KnownGroups["1"] != "" {
				return true
			}
		}
		return false
	})
	a.stop()
	b.stop()
	// Group 1 loses every disk; G1S1's directory survives as a backup.
	mustRename(t, filepath.Join(a.dataDir, "G1S1"), filepath.Join(a.dataDir, "G1S1.bak.0001"))
	mustRemove(t, filepath.Join(a.dataDir, "G1S2"))
	mustRemove(t, filepath.Join(b.dataDir, "G1S3"))
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "group 1's stores refuse to start from nothing", func() bool {
		sts, err := a.status()
		if err != nil {
			return false
		}
		refused := 0
		for _, s := range sts {
			if s.Group == 1 && s.State == "refused" && strings.Contains(s.Error, "cannot recover group 1: no store with state") {
				refused++
			}
		}
		return refused == 2
	})
	a.stop()
	out, errOut, code := runTool(t, bin, "umstored", "recover", "--deployment", deploy, "--host", "A", "--data-dir", a.dataDir, "--group", "1", "--list")
	if code != 0 || !strings.Contains(out, "G1S1.bak.0001") || !strings.Contains(out, "r:200") {
		t.Fatalf("recover --list: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runTool(t, bin, "umstored", "recover", "--deployment", deploy, "--host", "A", "--data-dir", a.dataDir, "--group", "1", "--promote", filepath.Join(a.dataDir, "G1S1.bak.0001"))
	if code != 0 {
		t.Fatalf("recover --promote: exit %d\n%s\n%s", code, out, errOut)
	}
	a.start()
	d.waitAllUp(t, "all six stores are up after the promotion")
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "r", "--group", "1")
	if code != 0 || strings.Count(out, "\n") != 200 {
		t.Fatalf("group 1 after recovery: exit %d, %d lines, %s", code, strings.Count(out, "\n"), errOut)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}
