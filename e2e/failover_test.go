package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// failoverRate is the publishing rate of the failover runs (msgs/s).
const failoverRate = 2000

// failoverSummary is the part of umpub's --json summary the failover runs
// read: counts and publish-to-stable latency.
type failoverSummary struct {
	Sent      int    `json:"sent"`
	Stable    int    `json:"stable"`
	FirstSeq  uint64 `json:"first_seq"`
	LastSeq   uint64 `json:"last_seq"`
	LatencyUS struct {
		P50 int64 `json:"p50"`
		P99 int64 `json:"p99"`
		Max int64 `json:"max"`
	} `json:"latency_us"`
}

func (s failoverSummary) String() string {
	return fmt.Sprintf("sent %d, stable %d, publish-to-stable p50 %v p99 %v max %v", s.Sent, s.Stable,
		time.Duration(s.LatencyUS.P50)*time.Microsecond, time.Duration(s.LatencyUS.P99)*time.Microsecond, time.Duration(s.LatencyUS.Max)*time.Microsecond)
}

// groupPlacement is a group of `umstored status --json`, with where its
// leader runs.
type groupPlacement struct {
	Index         int    `json:"index"`
	Leader        string `json:"leader"`
	LeaderHost    string `json:"leader_host"`
	PreferredHost string `json:"preferred_host"`
}

// leadersPlaced reports whether every group is led from its preferred
// host: group 1 from A, group 2 from B.
func leadersPlaced(t *testing.T, bin, deploy string) bool {
	out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st struct {
		Groups []groupPlacement `json:"groups"`
	}
	if json.Unmarshal([]byte(out), &st) != nil || len(st.Groups) != 2 {
		return false
	}
	want := map[int]string{1: "A", 2: "B"}
	for _, g := range st.Groups {
		if g.PreferredHost != want[g.Index] || g.LeaderHost != want[g.Index] {
			return false
		}
	}
	return true
}

// publishThrough publishes count messages on source at failoverRate, calls
// fault after `after`, and returns umpub's summary once it exits; every
// message must have become stable.
func publishThrough(t *testing.T, d *twoHosts, source string, count int, after time.Duration, fault func()) failoverSummary {
	t.Helper()
	cmd := exec.Command(filepath.Join(d.bin, "umpub"), "--deployment", d.deploy, "--source", source, "--count", fmt.Sprint(count),
		"--rate", fmt.Sprint(failoverRate), "--size", "64", "--json", "--timeout", "3m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("umpub ended before the fault: %v\n%s", err, stderr.String())
	case <-time.After(after):
	}
	fault()
	if err := <-done; err != nil {
		t.Fatalf("umpub: %v (not every message became stable)\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var sum failoverSummary
	if err := json.Unmarshal([]byte(lastLine(stdout.String())), &sum); err != nil {
		t.Fatalf("umpub summary: %v\n%s", err, stdout.String())
	}
	if sum.Sent != count || sum.Stable != count {
		t.Fatalf("umpub: %v, want %d sent and stable", sum, count)
	}
	return sum
}

// The failover runs on two `umstored run` hosts: leaders move to
// their groups' majority hosts (group 1 to A, group 2 to B); host A is
// killed -9, then paused (SIGSTOP), while publishing at 2,000 msgs/s, and
// every message becomes stable with publish-to-stable p99 under 1 s; a
// publisher killed -9 and restarted with its state file publishes again
// within 2 s, while another publisher still has to wait. Before leader
// placement both leaders sat on host A and killing it cost a p99 of 2.16 s;
// before incarnations the restarted publisher waited out its own session's
// 30 s activity timeout.
func TestTwoHostFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)
	start := time.Now()
	waitFor(t, 60*time.Second, "group 1 is led from host A and group 2 from host B", func() bool { return leadersPlaced(t, bin, d.deploy) })
	t.Logf("leaders on their preferred hosts %v after all six stores were up", time.Since(start).Round(100*time.Millisecond))

	const seconds = 12
	count := failoverRate * seconds
	// measure runs one fault while publishing and checks the p99. The
	// machine is shared (both cores may be busy with other tests for a
	// second), so a run over the bound is measured once more, on a fresh
	// source with the leaders placed again; both runs are logged.
	measure := func(what string, fault func(), heal func()) {
		for attempt := 1; attempt <= 2; attempt++ {
			sum := publishThrough(t, d, fmt.Sprintf("%s-%d", strings.Fields(what)[0], attempt), count, 4*time.Second, fault)
			t.Logf("FAILOVER %s host A at %d msgs/s (run %d): %v", what, failoverRate, attempt, sum)
			heal()
			p99 := time.Duration(sum.LatencyUS.P99) * time.Microsecond
			if p99 < time.Second {
				return
			}
			if attempt == 2 {
				t.Errorf("%s: publish-to-stable p99 %v, want under 1s", what, p99)
				return
			}
			t.Logf("%s: p99 %v is over 1s; measuring once more", what, p99)
			waitFor(t, 60*time.Second, "the leaders are back on their preferred hosts", func() bool { return leadersPlaced(t, bin, d.deploy) })
		}
	}
	measure("kill -9", func() { d.a.kill9() }, func() {
		d.a.start()
		d.waitAllUp(t, "host A is back with its state")
	})
	waitFor(t, 60*time.Second, "the leaders are back on their preferred hosts", func() bool { return leadersPlaced(t, bin, d.deploy) })
	measure("SIGSTOP", func() { d.a.cmd.Process.Signal(syscall.SIGSTOP) }, func() {
		d.a.cmd.Process.Signal(syscall.SIGCONT)
		d.waitAllUp(t, "host A answers again after SIGCONT")
	})

	// A publisher with a state file, killed -9 while publishing.
	state := filepath.Join(d.dir, "restart.state")
	victim := exec.Command(filepath.Join(bin, "umpub"), "--deployment", d.deploy, "--source", "restart", "--count", "1000000",
		"--rate", fmt.Sprint(failoverRate), "--state-file", state, "--timeout", "5m")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the publisher recorded its incarnation", func() bool { _, err := os.Stat(state); return err == nil })
	time.Sleep(2 * time.Second) // publishing for a while
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()

	// Another publisher (no state file: another identity) still waits for
	// the killed one's activity timeout.
	_, errOut, code := runTool(t, bin, "umpub", "--deployment", d.deploy, "--source", "restart", "--count", "1", "--timeout", "1s")
	if code == 0 || !strings.Contains(errOut, "held by a live publisher") {
		t.Fatalf("another publisher right after the kill: exit %d, stderr %q; want a refusal", code, errOut)
	}
	restarted := time.Now()
	out, errOut, code := runTool(t, bin, "umpub", "--deployment", d.deploy, "--source", "restart", "--count", "1", "--state-file", state, "--json", "--timeout", "10s")
	took := time.Since(restarted)
	if code != 0 {
		t.Fatalf("the restarted publisher: exit %d\n%s\n%s", code, out, errOut)
	}
	var sum failoverSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("FAILOVER publisher killed -9 and restarted with its state file: published and stable %v after the restart (resumed at %d)", took.Round(time.Millisecond), sum.FirstSeq)
	if took >= 2*time.Second || sum.FirstSeq < 2 {
		t.Fatalf("the restarted publisher took %v and resumed at %d; want under 2s, past the killed one's messages", took, sum.FirstSeq)
	}
}
