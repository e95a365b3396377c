package e2e_test

import (
	"fmt"
	"path/filepath"
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
	dir := t.TempDir()
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	mk := func(name, addr, dataDir string, adminPort int, extra ...string) *host {
		return &host{t: t, bin: bin, name: name, addr: addr, dataDir: dataDir, admin: fmt.Sprintf("%s:%d", addr, adminPort), deploy: deploy, extra: extra}
	}
	a := mk("A", "127.0.0.2", filepath.Join(dir, "A"), base+2000)
	b := mk("B", "127.0.0.3", filepath.Join(dir, "B"), base+2000)
	standby := mk("A", "127.0.0.2", filepath.Join(dir, "A"), base+2001, "--standby")
	t.Cleanup(func() {
		a.stop()
		b.stop()
		standby.stop()
		if t.Failed() {
			t.Logf("standby log:\n%s", tail(standby.stderr, 40))
		}
	})
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "all six stores are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})

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
	waitFor(t, 60*time.Second, "the standby has taken host A's stores over and all six are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	t.Logf("standby took over and the deployment recovered in %v", time.Since(killed).Round(time.Millisecond))
	sum := publishJSON(t, bin, deploy, "standby", 500)
	if sum.FirstSeq != 501 {
		t.Fatalf("publisher after the takeover resumed at %d, want 501", sum.FirstSeq)
	}
}
