package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// previousRelease returns the name and revision of the newest release in
// RELEASES that is not the head itself, and the repository's top
// directory.
func previousRelease(t *testing.T) (name, rev, top string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): the upgrade test builds the previous release from git", err)
	}
	lines := strings.Fields(string(out))
	top, head := lines[0], lines[1]
	f, err := os.Open(filepath.Join(top, "RELEASES"))
	if err != nil {
		t.Fatalf("RELEASES: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || fields[1] == head {
			continue
		}
		name, rev = fields[0], fields[1]
	}
	if rev == "" {
		t.Fatal("RELEASES names no release before the head")
	}
	if err := exec.Command("git", "-C", top, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		t.Skipf("release %s (%s) is not in this clone (a shallow clone? run git fetch --unshallow): the upgrade test builds it from git", name, rev)
	}
	return name, rev, top
}

// buildRelease extracts rev from git into a fresh directory and builds its
// umstored, umpub and umrcv there, through the module proxy as any build
// does; it returns the directory of the binaries.
func buildRelease(t *testing.T, top, rev string) string {
	t.Helper()
	src, bin := t.TempDir(), t.TempDir()
	archive := exec.Command("git", "-C", top, "archive", rev)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var archiveErr, untarErr bytes.Buffer // two processes: a buffer each
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("extract %s: %v\n%s", rev, err, untarErr.String())
	}
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/umstored", "./cmd/umpub", "./cmd/umrcv")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build release %s: %v\n%s", rev, err, out)
	}
	return bin
}

// levelStatus is what `umstored status --json` says of format levels.
type levelStatus struct {
	groups map[int]int    // group -> active level
	stores map[string]int // store -> format level of its binary
	active map[string]int // store -> active level as it applied it
	hosts  map[string]string
}

func levels(t *testing.T, bin, deploy string) levelStatus {
	t.Helper()
	out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st struct {
		Groups []struct {
			Index       int `json:"index"`
			ActiveLevel int `json:"active_level"`
			Stores      []struct {
				Name        string `json:"name"`
				Host        string `json:"host"`
				FormatLevel int    `json:"format_level"`
				ActiveLevel int    `json:"active_level"`
			} `json:"stores"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("umstored status --json: %v\n%s", err, out)
	}
	ls := levelStatus{groups: map[int]int{}, stores: map[string]int{}, active: map[string]int{}, hosts: map[string]string{}}
	for _, g := range st.Groups {
		ls.groups[g.Index] = g.ActiveLevel
		for _, s := range g.Stores {
			ls.stores[s.Name], ls.active[s.Name], ls.hosts[s.Name] = s.FormatLevel, s.ActiveLevel, s.Host
		}
	}
	return ls
}

// A rolling upgrade from the previous release, with publishing going on
// throughout: both hosts start on the release's binary; host A is
// upgraded, taken back to the release (a downgrade before finalization),
// upgraded again, then host B. No group's format level rises while a host
// runs the release; it rises once both run the new binary; every message
// is stable and reads back.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: builds the previous release")
	}
	name, rev, top := previousRelease(t)
	bin := binaries(t)
	start := time.Now()
	old := buildRelease(t, top, rev)
	t.Logf("built %s (%s) in %v", name, rev[:12], time.Since(start).Round(time.Second))

	// The deployment as the release planned it, run by the release.
	d := planTwoHosts(t, old)
	d.startAll(t)
	t.Logf("both hosts up on %s", name)

	const rate, count = 200, 8000 // 40 s at the rate: the whole upgrade (about 25 s) and more
	pub := exec.Command(filepath.Join(old, "umpub"), "--deployment", d.deploy, "--source", "rolling", "--count", fmt.Sprint(count),
		"--rate", fmt.Sprint(rate), "--size", "64", "--json", "--timeout", "4m")
	var pubOut, pubErr bytes.Buffer
	pub.Stdout, pub.Stderr = &pubOut, &pubErr
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Wait() }()
	t.Cleanup(func() {
		if pub.ProcessState == nil {
			pub.Process.Kill()
			<-pubDone
		}
	})
	publishing := func(when string) {
		t.Helper()
		select {
		case err := <-pubDone:
			t.Fatalf("umpub ended %s: %v\n%s\n%s", when, err, pubOut.String(), pubErr.String())
		default:
		}
	}
	time.Sleep(2 * time.Second)

	restart := func(h *host, binDir, what string) {
		t.Helper()
		h.stop()
		h.bin = binDir
		h.start()
		waitFor(t, 60*time.Second, what, func() bool {
			g, _, _ := deploymentStatus(t, bin, d.deploy)
			return allUp(g)
		})
		t.Logf("%s after %v", what, time.Since(start).Round(time.Second))
	}
	// levelStays checks for a while that no group rises above level 1
	// and that each store says the level of its host's binary.
	levelStays := func(onA, onB int) {
		t.Helper()
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			ls := levels(t, bin, d.deploy)
			for g, l := range ls.groups {
				if l > 1 {
					t.Fatalf("group %d rose to level %d while a host runs %s: %+v", g, l, name, ls)
				}
			}
			for s, l := range ls.stores {
				if want := map[string]int{"A": onA, "B": onB}[ls.hosts[s]]; l != want {
					t.Fatalf("store %s (host %s) says format level %d, want %d: %+v", s, ls.hosts[s], l, want, ls)
				}
			}
		}
	}

	restart(d.a, bin, "host A is up on the new binary")
	publishing("after host A's upgrade")
	levelStays(2, 1)
	if text, _, _ := runTool(t, bin, "umstored", "status", "--deployment", d.deploy); !strings.Contains(text, "v0.1.0 or older") ||
		!strings.Contains(text, "format level: 1 (not raised: ") || !strings.Contains(text, ": reads level 1") {
		t.Fatalf("umstored status of a half-upgraded deployment does not say what holds the level back:\n%s", text)
	}

	restart(d.a, old, "host A is back on "+name+" (a downgrade before finalization)")
	publishing("after host A's downgrade")
	levelStays(1, 1)

	restart(d.a, bin, "host A is up on the new binary again")
	levelStays(2, 1)
	restart(d.b, bin, "host B is up on the new binary")
	publishing("after host B's upgrade")
	waitFor(t, 30*time.Second, "every group and store at format level 2", func() bool {
		ls := levels(t, bin, d.deploy)
		for _, l := range ls.groups {
			if l != 2 {
				return false
			}
		}
		for _, l := range ls.active {
			if l != 2 {
				return false
			}
		}
		return len(ls.groups) == 2
	})
	t.Logf("format level 2 everywhere after %v", time.Since(start).Round(time.Second))
	out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", d.deploy)
	t.Logf("umstored status:\n%s", out)

	select {
	case err := <-pubDone:
		if err != nil {
			t.Fatalf("umpub: %v\n%s\n%s", err, pubOut.String(), pubErr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("umpub did not finish\n%s", pubErr.String())
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(pubOut.String())), &sum); err != nil {
		t.Fatalf("umpub summary: %v\n%s", err, pubOut.String())
	}
	if sum.Sent != count || sum.Stable != count {
		t.Fatalf("umpub: %+v, want %d sent and stable", sum, count)
	}
	rcv, errOut, code := runTool(t, bin, "umrcv", "--deployment", d.deploy, "--source", "rolling", "--from", "1", "--to", fmt.Sprint(count))
	if code != 0 {
		t.Fatalf("umrcv: exit %d: %s", code, errOut)
	}
	if n := strings.Count(rcv, "\n"); n != count {
		t.Fatalf("umrcv read %d messages, want %d", n, count)
	}
	t.Logf("%d messages stable and read back; the upgrade took %v", count, time.Since(start).Round(time.Second))
}
