package e2e_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildGateTest builds umstored with the umstore_gatetest tag: its leaders
// propose a test-only command type of level 2 (repository.CmdGateTest,
// not ignorable) at every round of their member checks, through the level
// gate unless UMSTORE_GATETEST=ungated.
func buildGateTest(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-tags", "umstore_gatetest", "-o", dir+string(filepath.Separator), "umstore/cmd/umstored")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags umstore_gatetest: %v\n%s", err, out)
	}
	return dir
}

// groupLedFrom reports whether group g's leader runs on host.
func groupLedFrom(t *testing.T, bin, deploy string, g int, host string) bool {
	out, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st struct {
		Groups []groupPlacement `json:"groups"`
	}
	if json.Unmarshal([]byte(out), &st) != nil {
		return false
	}
	for _, gp := range st.Groups {
		if gp.Index == g {
			return gp.LeaderHost == host
		}
	}
	return false
}

// The gate is what keeps a store of the previous release running beside
// new ones: with host A on a binary whose leaders keep proposing a format
// change (a test-only command type of level 2) and host B on the previous
// release, the gate refuses the change and B's stores keep running; the
// same binary without its gate writes it, and the store of the previous
// release in the group led from A stops on it ("unknown command type").
func TestUngatedFormatChangeStopsPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: builds the previous release")
	}
	name, rev, top := previousRelease(t)
	bin := binaries(t)
	old := buildRelease(t, top, rev)
	gated := buildGateTest(t)

	d := planTwoHosts(t, old)
	d.startAll(t)
	d.a.stop()
	d.a.bin = gated
	d.a.start()
	d.waitAllUp(t, "host A up on the gate-test binary, host B on "+name)
	waitFor(t, 60*time.Second, "group 1 is led from host A", func() bool { return groupLedFrom(t, bin, d.deploy, 1, "A") })
	waitFor(t, 20*time.Second, "host A's leader tried the test command", func() bool {
		return strings.Contains(d.a.stderr.String(), "gate test: the test command was not written")
	})
	time.Sleep(3 * time.Second) // three more rounds of refusals
	if log := d.a.stderr.String(); strings.Contains(log, "gate test: the test command was written") || !strings.Contains(log, "format level not active") {
		t.Fatalf("behind the gate the test command was written, or not refused for the level:\n%s", tail(d.a.stderr, 20))
	}
	groups, _, _ := deploymentStatus(t, bin, d.deploy)
	if !allUp(groups) {
		t.Fatalf("behind the gate a store stopped: %+v\nhost B log:\n%s", groups, tail(d.b.stderr, 20))
	}
	if strings.Contains(d.b.stderr.String(), "unknown command type") {
		t.Fatalf("behind the gate host B met an unknown command type:\n%s", tail(d.b.stderr, 20))
	}

	// The same binary without its gate.
	d.a.stop()
	d.a.env = []string{"UMSTORE_GATETEST=ungated"}
	d.a.start()
	waitFor(t, 90*time.Second, "a store of "+name+" on host B stops on the ungated command", func() bool {
		return strings.Contains(d.b.stderr.String(), "unknown command type 99")
	})
	t.Logf("host B (%s) without the gate:\n%s", name, grepLines(d.b.stderr.String(), "unknown command type 99"))
	if !strings.Contains(d.a.stderr.String(), "gate test: the test command was written") {
		t.Errorf("host A does not say it wrote the test command")
	}
}
