package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// host is one `umstored run` process standing in for a machine.
type host struct {
	t       *testing.T
	bin     string
	name    string
	addr    string
	dataDir string
	admin   string
	deploy  string
	extra   []string // more flags for umstored run
	env     []string // more environment for umstored run (NAME=VALUE)

	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (h *host) start() {
	h.t.Helper()
	args := append([]string{"run", "--deployment", h.deploy, "--host", h.name, "--data-dir", h.dataDir, "--admin-addr", h.admin}, h.extra...)
	h.cmd = exec.Command(filepath.Join(h.bin, "umstored"), args...)
	if h.stderr == nil {
		h.stderr = &syncBuffer{} // one log across restarts
	}
	h.cmd.Stderr = h.stderr
	if len(h.env) > 0 {
		h.cmd.Env = append(os.Environ(), h.env...)
	}
	if err := h.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(h.cmd, h.done)
}

// kill9 is a host crash.
func (h *host) kill9() {
	if h.cmd == nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
	h.cmd = nil
}

func (h *host) stop() {
	if h.cmd == nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-h.done
	}
	h.cmd = nil
}

// storeStatus is the part of /v1/status this test reads.
type storeStatus struct {
	Name       string `json:"name"`
	Group      int    `json:"group"`
	State      string `json:"state"`
	Leader     string `json:"leader"`
	CatchingUp bool   `json:"catching_up"`
	HasState   bool   `json:"has_state"`
	Error      string `json:"error"`
	LastStop   string `json:"last_stop"`
	GroupID    string `json:"group_id"`
	// KnownGroups: other groups' identities, by index (JSON object keys).
	KnownGroups map[string]string `json:"known_groups"`
}

func (h *host) status() ([]storeStatus, error) {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + h.admin + "/v1/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Stores []storeStatus `json:"stores"`
	}
	return st.Stores, json.NewDecoder(resp.Body).Decode(&st)
}

// basePortOn finds a base port whose planned ports (raft, client, admin) are
// free on every address.
func basePortOn(t *testing.T, addrs ...string) int {
	t.Helper()
	return freeBase(t, addrs, []int{11, 12, 13, 21, 22, 23, 1011, 1012, 1013, 1021, 1022, 1023, 2000})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statusJSON runs `umstored status --json`.
type groupStatus struct {
	Index  int    `json:"index"`
	Leader string `json:"leader"`
	Stores []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"stores"`
}

func deploymentStatus(t *testing.T, bin, deploy string) (groups []groupStatus, publishing bool, code int) {
	out, _, code := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st struct {
		Groups     []groupStatus `json:"groups"`
		Publishing bool          `json:"publishing"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("umstored status --json: %v\n%s", err, out)
	}
	return st.Groups, st.Publishing, code
}

func allUp(groups []groupStatus) bool {
	for _, g := range groups {
		if g.Leader == "" {
			return false
		}
		for _, s := range g.Stores {
			if s.State != "up" && s.State != "leader" {
				return false
			}
		}
	}
	return true
}

func publishJSON(t *testing.T, bin, deploy, source string, count int) pubSummary {
	t.Helper()
	out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", source, "--count", fmt.Sprint(count), "--size", "64", "--json", "--timeout", "60s")
	if code != 0 {
		t.Fatalf("umpub exited %d\n%s\n%s", code, out, errOut)
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestTwoHostArticle walks the "Two Store Hosts" article with real
// processes for host A (127.0.0.2) and host B (127.0.0.3): publish; host A
// crashes; publishing goes on; A returns with its state; A crashes again and
// returns without it, and its daemon stages its empty stores (never two of
// one group catching up together) until all six are up; every stable
// message reads back and a new publisher continues after the last.
func TestTwoHostArticle(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	dir := t.TempDir()
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy)
	if code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	hosts := map[string]*host{}
	for _, h := range []struct{ name, addr string }{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}} {
		hosts[h.name] = &host{t: t, bin: bin, name: h.name, addr: h.addr, dataDir: filepath.Join(dir, h.name), admin: fmt.Sprintf("%s:%d", h.addr, base+2000), deploy: deploy}
	}
	a, b := hosts["A"], hosts["B"]
	t.Cleanup(func() {
		a.stop()
		b.stop()
		if t.Failed() {
			t.Logf("host A log:\n%s", tail(a.stderr, 60))
			t.Logf("host B log:\n%s", tail(b.stderr, 60))
		}
	})
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "all six stores are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})

	stable := 0
	sum := publishJSON(t, bin, deploy, "article", 2000)
	stable += sum.Stable

	// Host A crashes: group 1 loses its quorum, group 2 keeps it.
	a.kill9()
	waitFor(t, 30*time.Second, "group 2 has a leader on host B", func() bool {
		g, pub, code := deploymentStatus(t, bin, deploy)
		return pub && code == 0 && g[0].Leader == "" && g[1].Leader != ""
	})
	sum = publishJSON(t, bin, deploy, "article", 1000)
	if sum.FirstSeq != 2001 {
		t.Fatalf("publisher during the outage resumed at %d, want 2001", sum.FirstSeq)
	}
	stable += sum.Stable

	// A comes back with its state.
	a.start()
	waitFor(t, 60*time.Second, "all six stores are up after A restarts with state", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})

	// A crashes again and comes back without its state.
	a.kill9()
	if err := os.RemoveAll(a.dataDir); err != nil {
		t.Fatal(err)
	}
	a.start()
	var mu sync.Mutex
	var violations []string
	maxCatchingUp := map[int]int{}
	waitFor(t, 90*time.Second, "host A's wiped stores are staged back and all six are up", func() bool {
		sts, err := a.status()
		if err == nil {
			perGroup := map[int]int{}
			for _, s := range sts {
				if s.CatchingUp {
					perGroup[s.Group]++
				}
			}
			mu.Lock()
			for g, n := range perGroup {
				maxCatchingUp[g] = max(maxCatchingUp[g], n)
				if n > 1 {
					violations = append(violations, fmt.Sprintf("%d empty stores of group %d catching up together: %+v", n, g, sts))
				}
			}
			mu.Unlock()
		}
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	if len(violations) > 0 {
		t.Fatalf("staged restart violated: %s", strings.Join(violations, "\n"))
	}
	t.Logf("most empty stores catching up at once, per group: %v", maxCatchingUp)
	checkStagedOrder(t, a.stderr.String(), "G1S1", "G1S2")

	// Every message reported stable reads back, in order.
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "article", "--from", "1", "--to", fmt.Sprint(stable))
	if code != 0 {
		t.Fatalf("umrcv: exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "\n"); n != stable {
		t.Fatalf("umrcv read %d messages, want %d", n, stable)
	}
	// Intergroup repair: group 1 missed 2001-3000 while it had no quorum;
	// within a bounded time each group holds every message on its own.
	for _, g := range []string{"1", "2"} {
		waitFor(t, 60*time.Second, "group "+g+" holds every stable message", func() bool {
			out, _, code := runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "article", "--group", g, "--from", "1", "--to", fmt.Sprint(stable))
			return code == 0 && strings.Count(out, "\n") == stable
		})
	}
	sum = publishJSON(t, bin, deploy, "article", 10)
	if sum.FirstSeq != uint64(stable)+1 {
		t.Fatalf("publisher after full restoration resumed at %d, want %d", sum.FirstSeq, stable+1)
	}
}

func tail(b *syncBuffer, n int) string {
	if b == nil {
		return ""
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkStagedOrder checks in a daemon's log that of two empty stores of one
// group, the second joined only after the first had caught up.
func checkStagedOrder(t *testing.T, log, s1, s2 string) {
	t.Helper()
	pos := func(msg, store string) int {
		for i, l := range strings.Split(log, "\n") {
			if strings.Contains(l, msg) && strings.Contains(l, "store="+store) {
				return i
			}
		}
		return -1
	}
	const joined, caughtUp = "joining the group empty", "caught up with the group"
	j1, j2 := pos(joined, s1), pos(joined, s2)
	c1, c2 := pos(caughtUp, s1), pos(caughtUp, s2)
	if j1 < 0 || j2 < 0 || c1 < 0 || c2 < 0 {
		t.Fatalf("the daemon's log lacks the join/catch-up lines of %s and %s (%d %d %d %d)", s1, s2, j1, c1, j2, c2)
	}
	first, firstDone, second := j1, c1, j2
	if j2 < j1 {
		first, firstDone, second = j2, c2, j1
	}
	if !(first < firstDone && firstDone < second) {
		t.Fatalf("%s and %s were not staged: join at lines %d and %d, first caught up at line %d", s1, s2, first, second, firstDone)
	}
}
