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

// A state-file jump is not loss (issue 28 case 3). umpub with a state file
// publishes 10 messages, and its next incarnation, which finds the file as
// a killed one leaves it (not settled, numbers reserved up to 4,106),
// starts while host B is down: group 2 has no majority, so it resumes past
// the bound at 4,107 and never sends 11-4106. Once host B is back and
// group 2 has said what it holds, umpub declares that range never
// published, and a full read of the source, or of 1 to the end, exits 0.
// Before, the range was a gap in both groups for good, and every read of
// it exited 1 ("unrecoverable loss").
func TestStateFileJumpIsNotLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test with two hosts")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)
	state := filepath.Join(d.dir, "jump.state")
	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", d.deploy, "--source", "jump", "--count", "10", "--state-file", state); code != 0 {
		t.Fatalf("umpub: exit %d\n%s\n%s", code, out, errOut)
	}
	unsettleFile(t, state, 4106)

	d.b.kill9()
	time.Sleep(2500 * time.Millisecond) // group 2's store on A has known no leader for longer than an election takes
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(1500 * time.Millisecond)
		d.b.start()
	}()
	// 40 messages over 8 s: umpub is still sending when group 2 answers.
	out, errOut, code := runTool(t, bin, "umpub", "--deployment", d.deploy, "--source", "jump", "--count", "40", "--rate", "5",
		"--state-file", state, "--json", "--log-level", "info")
	<-restarted // host B's process is the test's again (a fatal below reads it)
	if code != 0 {
		t.Fatalf("umpub after the jump: exit %d\n%s\n%s", code, out, errOut)
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || sum.FirstSeq != 4107 || sum.Stable != 40 {
		t.Fatalf("umpub after the jump: %+v, %v; want 40 stable from 4107\n%s", sum, err, errOut)
	}
	if !strings.Contains(errOut, "declaring the skipped numbers never published") {
		t.Fatalf("umpub did not declare 11-4106 never published once group 2 answered:\n%s", errOut)
	}
	d.waitAllUp(t, "host B is back")
	for _, args := range [][]string{
		{"--source", "jump"},
		{"--source", "jump", "--from", "1", "--to", "4146"},
	} {
		var out, errOut string
		var code int
		// The record reaches each group with the next frame or keep-alive.
		waitFor(t, 20*time.Second, fmt.Sprintf("umrcv %v exits 0", args), func() bool {
			out, errOut, code = runTool(t, bin, append([]string{"umrcv", "--deployment", d.deploy}, args...)...)
			return code == 0
		})
		if n := strings.Count(out, "\n"); n != 50 {
			t.Fatalf("umrcv %v: %d messages, want 50 (1-10, 4107-4146)\n%s", args, n, errOut)
		}
	}
}

// unsettleFile rewrites a publisher's state file as a killed incarnation
// leaves it: not settled, numbers reserved up to sentUpTo.
func unsettleFile(t *testing.T, state string, sentUpTo uint64) {
	t.Helper()
	var f map[string]any
	b, err := os.ReadFile(state)
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		t.Fatal(err)
	}
	f["settled"], f["sent_up_to"] = false, sentUpTo
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
