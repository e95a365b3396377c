package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A deployment with client identities (security.clients): umpub with an
// identity's own token publishes what the identity may, and one a source
// it may not is refused at once, well under its --timeout, in words that
// name the identity and the permission. The operators' tools keep
// working with the deployment's own token.
func TestClientIdentitiesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"token": "deployment-secret\n", "billing.token": "billing-secret\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	planned, err := os.ReadFile(deploy)
	if err != nil {
		t.Fatal(err)
	}
	secured := strings.Replace(string(planned), "security:\n", `security:
  token-file: token
  clients:
    - name: billing
      token-file: billing.token
      publish: [orders.>]
      receive: [orders.>]
`, 1)
	if secured == string(planned) {
		t.Fatalf("plan wrote no security section:\n%s", planned)
	}
	if err := os.WriteFile(deploy, []byte(secured), 0o644); err != nil {
		t.Fatal(err)
	}
	var hosts []*host
	for _, h := range []struct{ name, addr string }{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}} {
		hh := &host{t: t, bin: bin, name: h.name, addr: h.addr, dataDir: filepath.Join(dir, h.name), admin: fmt.Sprintf("%s:%d", h.addr, base+2000), deploy: deploy}
		hh.start()
		hosts = append(hosts, hh)
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			h.stop()
		}
	})
	waitFor(t, 60*time.Second, "all six stores are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	billing := filepath.Join(dir, "billing.token")
	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--token-file", billing, "--source", "orders.eu", "--count", "10", "--timeout", "60s"); code != 0 {
		t.Fatalf("umpub as billing on orders.eu: exit %d\n%s\n%s", code, out, errOut)
	}
	start := time.Now()
	_, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--token-file", billing, "--source", "payments", "--count", "1", "--timeout", "60s")
	took := time.Since(start)
	if code == 0 || !strings.Contains(errOut, `identity "billing" may not publish source "payments"`) {
		t.Fatalf("umpub as billing on payments: exit %d, stderr %q; want a refusal naming the identity and the permission", code, errOut)
	}
	if took > 3*time.Second {
		t.Fatalf("the refusal took %v, want well under the 60s timeout (a refusal is final: nothing to wait for)", took)
	}
	t.Logf("refused in %v: %s", took, lastLine(errOut))

	start = time.Now()
	_, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--token-file", billing, "--source", "payments", "--timeout", "60s")
	took = time.Since(start)
	if code == 0 || !strings.Contains(errOut, `identity "billing" may not receive source "payments"`) {
		t.Fatalf("umrcv as billing on payments: exit %d, stderr %q; want a refusal naming the identity and the permission", code, errOut)
	}
	if took > 3*time.Second {
		t.Fatalf("umrcv's refusal took %v, want well under the 60s timeout (a refusal is final: nothing to wait for)", took)
	}
	t.Logf("umrcv refused in %v: %s", took, lastLine(errOut))

	start = time.Now()
	_, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--token-file", billing, "--source", "orders.eu", "--name", "app1", "--timeout", "60s")
	took = time.Since(start)
	if code == 0 || !strings.Contains(errOut, `identity "billing" may not use receiver name "app1"`) || took > 3*time.Second {
		t.Fatalf("umrcv --name app1 as billing: exit %d after %v, stderr %q; want a refusal at once naming the identity and the permission", code, took, errOut)
	}
	t.Logf("umrcv --name refused in %v: %s", took, lastLine(errOut))

	// The Python client reads the same deployment file and presents its
	// --token-file as before: an identity's token publishes what it may,
	// and a refusal every group gave ends the wait at once (it waited out
	// --timeout before).
	py := pythonWithMsgpack(t)
	if out, errOut, code := runPython(t, py, "publish", "--deployment", deploy, "--token-file", billing, "--source", "orders.py", "--count", "5", "--json"); code != 0 {
		t.Fatalf("python publish as billing on orders.py: exit %d\n%s\n%s", code, out, errOut)
	}
	start = time.Now()
	_, errOut, code = runPython(t, py, "publish", "--deployment", deploy, "--token-file", billing, "--source", "payments", "--count", "1", "--timeout", "30")
	if code == 0 || !strings.Contains(errOut, `identity "billing" may not publish source "payments"`) || time.Since(start) > 10*time.Second {
		t.Fatalf("python publish as billing on payments: exit %d after %v, stderr %q; want a refusal naming the identity and the permission", code, time.Since(start), errOut)
	}
	t.Logf("python publish refused in %v: %s", time.Since(start), lastLine(errOut))
}
