package e2e_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A publisher killed -9 holds its source until the source-activity-timeout
// passes: a new publisher is refused before, takes over after, and resumes
// past everything the killed one had made stable.
func TestKilledPublisherIsTakenOverAfterTheTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data, "--source-activity-timeout", "4s")
	deploy := filepath.Join(data, "deployment.yaml")

	victim := exec.Command(filepath.Join(bin, "umpub"), "--deployment", deploy, "--source", "job", "--count", "1000000", "--rate", "500", "--timeout", "5m")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	killed := time.Now()

	_, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "job", "--count", "1", "--timeout", "1500ms")
	if code == 0 || !strings.Contains(errOut, "held by a live publisher") {
		t.Fatalf("a new publisher right after the kill: exit %d, stderr %q; want a refusal", code, errOut)
	}
	out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "job", "--count", "10", "--json", "--timeout", "30s")
	took := time.Since(killed)
	if code != 0 {
		t.Fatalf("a new publisher after the timeout: exit %d\n%s\n%s", code, out, errOut)
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
		t.Fatal(err)
	}
	if took < 4*time.Second {
		t.Fatalf("the source was taken over %v after the kill, before the 4s timeout", took)
	}
	if sum.FirstSeq < 2 {
		t.Fatalf("the new publisher resumed at %d, not past the killed one's messages", sum.FirstSeq)
	}
	t.Logf("taken over %v after the kill, resuming at %d", took.Round(time.Millisecond), sum.FirstSeq)
}
