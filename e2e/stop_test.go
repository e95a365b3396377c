package e2e_test

import (
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
	d := planTwoHosts(t, bin)
	a, b, deploy := d.a, d.b, d.deploy
	d.startAll(t)
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
