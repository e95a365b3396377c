package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Two processes for the same host's stores: without --standby the second
// fails at once naming the holder; with --standby it waits, and when the
// first is killed -9 it takes the stores over and the deployment serves on.
// While it waits, its admin address answers /readyz 503 "standby: ..." and
// serves a page saying so.
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

	// While it waits, the standby serves its admin address: not ready,
	// because standby; its page says so.
	standby.start()
	get := func(path string) (int, string) {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + standby.admin + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor(t, 10*time.Second, "the waiting standby serves /healthz", func() bool {
		code, _ := get("/healthz")
		return code == http.StatusOK
	})
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "standby: ") {
		t.Fatalf("/readyz of a waiting standby: %d %q; want 503 saying standby", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "host A is a standby") {
		t.Fatalf("the page of a waiting standby: %d\n%s", code, body)
	}
	publishJSON(t, bin, deploy, "standby", 500)
	a.kill9()
	killed := time.Now()
	d.waitAllUp(t, "the standby has taken host A's stores over and all six are up")
	waitFor(t, 30*time.Second, "the standby's /readyz answers ready", func() bool {
		code, _ := get("/readyz")
		return code == http.StatusOK
	})
	t.Logf("standby took over and the deployment recovered in %v", time.Since(killed).Round(time.Millisecond))
	sum := publishJSON(t, bin, deploy, "standby", 500)
	if sum.FirstSeq != 501 {
		t.Fatalf("publisher after the takeover resumed at %d, want 501", sum.FirstSeq)
	}
}
