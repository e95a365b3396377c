package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Two processes for the same host's stores: without --standby the second
// fails at once naming the holder; with --standby it waits, and when the
// first is killed -9 it takes the stores over and the deployment serves on.
func TestStandbyTakesOverTheStores(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	a, deploy, base := d.a, d.deploy, d.base
	standby := d.host(t, "A", "127.0.0.2", base+2001, "--standby")
	t.Cleanup(func() {
		standby.stop()
		if t.Failed() {
			t.Logf("standby log:\n%s", tail(standby.stderr, 40))
		}
	})
	d.startAll(t)

	// A second process without --standby is refused at once.
	_, errOut, code := runTool(t, bin, "umstored", "run", "--deployment", deploy, "--host", "A", "--data-dir", a.dataDir, "--admin-addr", fmt.Sprintf("127.0.0.2:%d", base+2002))
	if code == 0 || !strings.Contains(errOut, "locked by another process") || !strings.Contains(errOut, "--standby") {
		t.Fatalf("second process: exit %d, stderr %q; want a refusal naming the lock and --standby", code, errOut)
	}

	standby.start()
	time.Sleep(2 * time.Second)
	if _, err := standby.status(); err == nil {
		// The admin address only comes up once the stores are open.
		t.Fatal("the standby serves status while the stores are still held by the first process")
	}
	publishJSON(t, bin, deploy, "standby", 500)
	a.kill9()
	killed := time.Now()
	d.waitAllUp(t, "the standby has taken host A's stores over and all six are up")
	t.Logf("standby took over and the deployment recovered in %v", time.Since(killed).Round(time.Millisecond))
	sum := publishJSON(t, bin, deploy, "standby", 500)
	if sum.FirstSeq != 501 {
		t.Fatalf("publisher after the takeover resumed at %d, want 501", sum.FirstSeq)
	}
}
