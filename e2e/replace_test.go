package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// movedStatus is the part of `umstored status --json` this test reads.
type movedStatus struct {
	Groups []struct {
		Index  int    `json:"index"`
		Leader string `json:"leader"`
		Stores []struct {
			Name      string `json:"name"`
			Host      string `json:"host"`
			Address   string `json:"address"`
			MovedFrom string `json:"moved_from"`
			State     string `json:"state"`
		} `json:"stores"`
	} `json:"groups"`
	Publishing bool `json:"publishing"`
}

func statusWith(t *testing.T, bin, deploy string) movedStatus {
	t.Helper()
	out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st movedStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("umstored status --json: %v\n%s", err, out)
	}
	return st
}

// everyStoreUp reports whether every group has a leader and every store is
// up, and, when onHost is given, whether that host's stores answered at
// addresses on it.
func (st movedStatus) everyStoreUp(host, onHost string) bool {
	for _, g := range st.Groups {
		if g.Leader == "" {
			return false
		}
		for _, s := range g.Stores {
			if s.State != "up" && s.State != "leader" {
				return false
			}
			if onHost != "" && s.Host == host && !strings.HasPrefix(s.Address, onHost+":") {
				return false
			}
		}
	}
	return len(st.Groups) > 0
}

// TestHostReplacedAtANewAddress is the article's "different server": host
// A (127.0.0.2) is lost with its disk, the operator moves its address to
// 127.0.0.4 in a copy of the deployment file (umstored plan --deployment)
// and starts `umstored run --host A` there with the copy, while host B
// (127.0.0.3) runs on with the original file. All six stores come up,
// `umstored status` shows them with either file (with the original, host
// A's stores at their new addresses, as moved), a publisher with the
// original file is redirected to group 1's leader on the new server, group
// 1 alone holds every message, and once B is killed publishing goes on
// through the new A, which holds group 1's majority.
func TestHostReplacedAtANewAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	dir := t.TempDir()
	base := basePortOn(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	a := &host{t: t, bin: bin, name: "A", addr: "127.0.0.2", dataDir: filepath.Join(dir, "A"), admin: fmt.Sprintf("127.0.0.2:%d", base+2000), deploy: deploy}
	b := &host{t: t, bin: bin, name: "B", addr: "127.0.0.3", dataDir: filepath.Join(dir, "B"), admin: fmt.Sprintf("127.0.0.3:%d", base+2000), deploy: deploy}
	var a2 *host
	t.Cleanup(func() {
		a.stop()
		b.stop()
		if a2 != nil {
			a2.stop()
		}
		if t.Failed() {
			t.Logf("host A log:\n%s", tail(a.stderr, 40))
			t.Logf("host B log:\n%s", tail(b.stderr, 60))
			if a2 != nil {
				t.Logf("new host A log:\n%s", tail(a2.stderr, 80))
			}
		}
	})
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "all six stores are up", func() bool { return statusWith(t, bin, deploy).everyStoreUp("", "") })
	stable := publishJSON(t, bin, deploy, "moved", 2000).Stable

	// Host A is lost with its disk; its replacement gets another address.
	a.kill9()
	if err := os.RemoveAll(a.dataDir); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "deployment-moved.yaml")
	out, errOut, code := runTool(t, bin, "umstored", "plan", "--deployment", deploy, "--host", "A=127.0.0.4", "--out", moved)
	if code != 0 || !strings.Contains(out, "host A: 127.0.0.2 -> 127.0.0.4") {
		t.Fatalf("plan --deployment: exit %d\n%s\n%s", code, out, errOut)
	}
	a2 = &host{t: t, bin: bin, name: "A", addr: "127.0.0.4", dataDir: filepath.Join(dir, "A-new"), admin: fmt.Sprintf("127.0.0.4:%d", base+2000), deploy: moved}
	a2.start()
	waitFor(t, 120*time.Second, "all six stores are up, host A's on 127.0.0.4", func() bool {
		return statusWith(t, bin, moved).everyStoreUp("A", "127.0.0.4")
	})
	// With the file host B still runs with, the status finds host A's
	// stores where their groups say they are, and says they moved.
	waitFor(t, 30*time.Second, "the original file's status shows host A's stores at their new addresses", func() bool {
		st := statusWith(t, bin, deploy)
		if !st.everyStoreUp("A", "127.0.0.4") {
			return false
		}
		for _, g := range st.Groups {
			for _, s := range g.Stores {
				if s.Host == "A" && !strings.HasPrefix(s.MovedFrom, "127.0.0.2:") {
					return false
				}
			}
		}
		return true
	})
	if out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy); !strings.Contains(out, "(moved from 127.0.0.2:") {
		t.Errorf("umstored status with the original file does not say host A's stores moved:\n%s", out)
	}

	// A publisher with the original file reaches group 1's leader on the
	// new server through the redirects of host B's stores.
	sum := publishJSON(t, bin, deploy, "moved", 1000)
	if sum.FirstSeq != uint64(stable)+1 {
		t.Fatalf("the publisher with the original file resumed at %d, want %d", sum.FirstSeq, stable+1)
	}
	stable += sum.Stable

	// Group 1 alone holds every message: G1S3 kept them, the new G1S1 and
	// G1S2 caught up from it.
	waitFor(t, 60*time.Second, "group 1 alone holds every message", func() bool {
		out, _, code := runTool(t, bin, "umrcv", "--deployment", moved, "--source", "moved", "--group", "1", "--from", "1", "--to", fmt.Sprint(stable))
		return code == 0 && strings.Count(out, "\n") == stable
	})

	// Host B goes: group 1's majority is on the new A, and publishing goes
	// on there.
	b.kill9()
	waitFor(t, 30*time.Second, "group 1 has a leader on the new host A", func() bool {
		st := statusWith(t, bin, moved)
		return len(st.Groups) > 0 && st.Groups[0].Leader != "" && st.Publishing
	})
	sum = publishJSON(t, bin, moved, "moved", 500)
	if sum.FirstSeq != uint64(stable)+1 || sum.Stable != 500 {
		t.Fatalf("with host B gone: first %d (want %d), stable %d of 500", sum.FirstSeq, stable+1, sum.Stable)
	}
	stable += sum.Stable
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", moved, "--source", "moved", "--group", "1", "--from", "1", "--to", fmt.Sprint(stable))
	if code != 0 || strings.Count(out, "\n") != stable {
		t.Fatalf("umrcv --group 1 after B: exit %d, %d of %d messages\n%s", code, strings.Count(out, "\n"), stable, errOut)
	}
}
