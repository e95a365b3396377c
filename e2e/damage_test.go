package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One store's repository file is cut short while its host is down
// (`truncate -s 65536 G1S2/repo.db`): when the host starts again its
// process survives (bbolt used to fault on the cut file, and the whole
// `umstored run` with every store of the host died, at every restart), the
// damaged store moves its files to a numbered backup, rejoins its group
// empty and catches up; all six stores are up and every group still holds
// everything published before.
func TestDamagedRepositoryRejoinsAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	a, deploy := d.a, d.deploy
	d.startAll(t)
	const count = 5000
	if sum := publishJSON(t, bin, deploy, "dmg", count); sum.Stable != count {
		t.Fatalf("umpub: %+v; want %d stable", sum, count)
	}
	victim := ""
	for _, name := range []string{"G1S2", "G1S1", "G2S1", "G2S2"} {
		if fi, err := os.Stat(filepath.Join(a.dataDir, name, "repo.db")); err == nil && fi.Size() > 65536 {
			victim = name
			break
		}
	}
	if victim == "" {
		t.Fatalf("host A holds no repository larger than 64 KiB in %s", a.dataDir)
	}
	a.stop()
	if err := os.Truncate(filepath.Join(a.dataDir, victim, "repo.db"), 65536); err != nil {
		t.Fatal(err)
	}
	a.start()
	d.waitAllUp(t, "all six stores are up after "+victim+" rejoined")
	select {
	case <-a.done:
		t.Fatalf("host A's umstored exited:\n%s", tail(a.stderr, 40))
	default:
	}
	log := a.stderr.String()
	if !strings.Contains(log, "damaged files") || !strings.Contains(log, victim+".bak.0001") || !strings.Contains(log, filepath.Join(victim, "repo.db")) {
		t.Fatalf("host A's log does not say that %s's repo.db is damaged and where its files went:\n%s", victim, tail(a.stderr, 40))
	}
	if _, err := os.Stat(filepath.Join(a.dataDir, victim+".bak.0001", "repo.db")); err != nil {
		t.Fatalf("the damaged file is not in the backup: %v", err)
	}
	for _, g := range []string{"1", "2"} {
		var out, errOut string
		var code int
		waitFor(t, 60*time.Second, "group "+g+" serves every message", func() bool {
			out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "dmg", "--group", g)
			return code == 0 && strings.Count(out, "\n") == count
		})
		if code != 0 {
			t.Fatalf("umrcv --group %s: exit %d, %d lines; %s", g, code, strings.Count(out, "\n"), errOut)
		}
	}
}
