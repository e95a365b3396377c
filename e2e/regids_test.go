package e2e_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/testmain"
	"umstore/placement"
)

// A RegID per store, as UM gives each store its own: umpub takes the list
// (it was refused: "give every store the same RegID"), registers as one
// session per assignment, and a publisher killed -9 (no goodbye) is taken
// over at once by its restart, which resumes after what the groups hold,
// even when the restart's list gives a group's RegIDs to its stores in
// another order (a RegID of one store presented to another): the group is
// one replicated store, any of whose stores may lead. Another assignment
// is another session, refused while the killed one's registration lasts.
func TestUMStoreListRegIDPerStore(t *testing.T) {
	testmain.Slow(t)
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data, "--source-activity-timeout", "20s")
	deploy := filepath.Join(data, "deployment.yaml")
	d, err := placement.Load(deploy)
	if err != nil {
		t.Fatal(err)
	}
	// list gives store i of the deployment RegID base+i, group 1's RegIDs
	// rotated by shift among its stores.
	list := func(base, shift int) []string {
		var args []string
		refs := d.Stores()
		for i, r := range refs {
			id := base + i
			if r.Group == 1 {
				id = base + (i+shift)%3
			}
			args = append(args, "--store", fmt.Sprintf("%s:%d:%d", r.ClientAddr(), id, r.Group-1))
		}
		return args
	}
	type summary struct {
		pubSummary
		Session string `json:"session"`
	}
	umpub := func(stores []string, extra ...string) (summary, int, string, time.Duration) {
		t.Helper()
		start := time.Now()
		args := append(append([]string{"umpub", "--source", "regids", "--json"}, extra...), stores...)
		out, errOut, code := runTool(t, bin, args...)
		var sum summary
		_ = json.Unmarshal([]byte(lastLine(out)), &sum)
		return sum, code, errOut, time.Since(start)
	}
	// killed runs umpub with stores in the background and kills it -9
	// once it has published for a while: its registration stays.
	killed := func(stores []string) {
		t.Helper()
		args := append([]string{"--source", "regids", "--count", "100000", "--rate", "50"}, stores...)
		cmd := exec.Command(filepath.Join(bin, "umpub"), args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(800 * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
	}

	sum, code, errOut, _ := umpub(list(5000, 0), "--count", "10")
	if code != 0 || sum.Stable != 10 || sum.FirstSeq != 1 || !strings.HasPrefix(sum.Session, "regids:") {
		t.Fatalf("umpub with a RegID per store: exit %d, %+v\n%s", code, sum, errOut)
	}
	session := strings.Split(sum.Session, "#")[0]

	for _, shift := range []int{0, 1} {
		killed(list(5000, 0))
		sum, code, errOut, took := umpub(list(5000, shift), "--count", "10", "--timeout", "10s")
		if code != 0 || sum.Stable != 10 || sum.FirstSeq <= 11 || strings.Split(sum.Session, "#")[0] != session || took > 8*time.Second {
			t.Fatalf("restart after a kill, group 1's RegIDs rotated by %d: exit %d after %v, %+v; want the same session %s taking the source over at once, resuming after the killed run's messages\n%s",
				shift, code, took.Round(time.Millisecond), sum, session, errOut)
		}
	}

	killed(list(5000, 0))
	_, code, errOut, _ = umpub(list(6000, 0), "--count", "10", "--timeout", "3s")
	if code == 0 || !strings.Contains(errOut, "another live publisher holds the source") {
		t.Fatalf("other RegIDs while the killed publisher's registration lasts: exit %d; want a refusal naming the holder\n%s", code, errOut)
	}
}
