package e2e_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A host that is paused costs a new client a short bound, not a time-out
// (issue 28 case 2). With host B under SIGSTOP, group 2 has lost its
// majority (two of its stores are B's) and group 1 leads from host A: a
// new umpub registers with group 1 and goes on once group 2's store on A
// says it has known no leader for longer than an election takes; umrcv
// reads group 1 and does not wait for group 2. Before, umpub took 7.0 s
// (RegisterTimeout, then a 2 s grace for group 2's copies) and umrcv 27 s
// (every request to group 2 went round its stores until a time-out).
func TestPausedHostCostsNewClientsAShortBound(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test with two hosts")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)
	publishJSON(t, bin, d.deploy, "paused", 10) // both groups hold 1-10

	if err := d.b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.b.cmd.Process.Signal(syscall.SIGCONT) })
	// Group 1 elects on host A if it led from B; group 2's store on A
	// then knows no leader for longer than an election takes.
	time.Sleep(3 * time.Second)

	// The bound is about 0.5 s; the rest is a process start and
	// a shared, busy machine.
	const bound = 2 * time.Second
	timed := func(what string, args ...string) (string, string) {
		t.Helper()
		start := time.Now()
		out, errOut, code := runTool(t, bin, args...)
		took := time.Since(start)
		t.Logf("%s with host B paused: %v", what, took.Round(10*time.Millisecond))
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", what, code, out, errOut)
		}
		if took > bound {
			t.Errorf("%s took %v with host B paused, want at most %v\n%s", what, took.Round(10*time.Millisecond), bound, errOut)
		}
		return out, errOut
	}
	_, errOut := timed("umpub --count 10", "umpub", "--deployment", d.deploy, "--source", "paused", "--count", "10", "--log-level", "info")
	if !strings.Contains(errOut, "resuming without the groups that have no leader") || !strings.Contains(errOut, "groups=[2]") {
		t.Errorf("umpub did not say at info why it went on without group 2:\n%s", errOut)
	}
	out, _ := timed("umrcv --from 1 --to 15", "umrcv", "--deployment", d.deploy, "--source", "paused", "--from", "1", "--to", "15", "--log-level", "info")
	for seq := 1; seq <= 15; seq++ {
		if !strings.Contains(out, fmt.Sprintf("paused #%d ", seq)) {
			t.Fatalf("umrcv did not deliver %d:\n%s", seq, out)
		}
	}
}
