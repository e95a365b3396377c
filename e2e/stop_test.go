package e2e_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// umstored stop stops every store cleanly; each daemon exits, and on the
// next start every store reports a clean last stop.
func TestStopIsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	dir := t.TempDir()
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	a := &host{t: t, bin: bin, name: "A", addr: "127.0.0.2", dataDir: filepath.Join(dir, "A"), admin: fmt.Sprintf("127.0.0.2:%d", base+2000), deploy: deploy}
	b := &host{t: t, bin: bin, name: "B", addr: "127.0.0.3", dataDir: filepath.Join(dir, "B"), admin: fmt.Sprintf("127.0.0.3:%d", base+2000), deploy: deploy}
	t.Cleanup(func() { a.stop(); b.stop() })
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "all six stores are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	publishJSON(t, bin, deploy, "s", 100)
	out, errOut, code := runTool(t, bin, "umstored", "stop", "--deployment", deploy)
	if code != 0 || strings.Count(out, "stopped ") != 6 {
		t.Fatalf("umstored stop: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, h := range []*host{a, b} {
		select {
		case <-h.done:
			h.cmd = nil
		case <-time.After(30 * time.Second):
			t.Fatalf("host %s's daemon did not exit after its stores stopped", h.name)
		}
	}
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "every store is back and reports a clean last stop", func() bool {
		clean := 0
		for _, h := range []*host{a, b} {
			sts, err := h.status()
			if err != nil {
				return false
			}
			for _, s := range sts {
				if s.LastStop == "clean" {
					clean++
				}
			}
		}
		return clean == 6
	})
}
