package e2e_test

import (
	"os"
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

// With an operator token in the deployment, umstored stop works with it,
// and a stop that presents only the client token is refused by every store:
// every store keeps running and the command says what it lacks. So does
// umstored backup.
func TestStopNeedsTheOperatorToken(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	for name, token := range map[string]string{"client.token": "client-secret\n", "operator.token": "operator-secret\n"} {
		if err := os.WriteFile(filepath.Join(d.dir, name), []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// plan wrote a security section naming the member secret: add the
	// tokens to it.
	planned, err := os.ReadFile(d.deploy)
	if err != nil {
		t.Fatal(err)
	}
	secured := strings.Replace(string(planned), "security:\n", "security:\n  token-file: client.token\n  operator-token-file: operator.token\n", 1)
	if secured == string(planned) {
		t.Fatalf("plan wrote no security section:\n%s", planned)
	}
	if err := os.WriteFile(d.deploy, []byte(secured), 0o644); err != nil {
		t.Fatal(err)
	}
	d.startAll(t)

	// A backup is an operator's act too.
	out, errOut, code := runTool(t, bin, "umstored", "backup", "--deployment", d.deploy, "--out", filepath.Join(d.dir, "refused"), "--operator-token-file", filepath.Join(d.dir, "client.token"))
	if code != 1 || !strings.Contains(errOut, "taking a backup needs the deployment's operator token") {
		t.Fatalf("umstored backup with the client token as operator token: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := runTool(t, bin, "umstored", "backup", "--deployment", d.deploy, "--out", filepath.Join(d.dir, "backup")); code != 0 {
		t.Fatalf("umstored backup with the deployment's operator token: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = runTool(t, bin, "umstored", "stop", "--deployment", d.deploy, "--operator-token-file", filepath.Join(d.dir, "client.token"))
	if code != 1 || strings.Contains(out, "stopped ") || strings.Count(errOut, "needs the deployment's operator token") != 6 {
		t.Fatalf("umstored stop with the client token as operator token: exit %d\n%s\n%s", code, out, errOut)
	}
	if g, _, _ := deploymentStatus(t, bin, d.deploy); !allUp(g) {
		t.Fatalf("a store stopped without the operator token: %+v", g)
	}
	out, errOut, code = runTool(t, bin, "umstored", "stop", "--deployment", d.deploy)
	if code != 0 || strings.Count(out, "stopped ") != 6 {
		t.Fatalf("umstored stop with the deployment's operator token: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, h := range []*host{d.a, d.b} {
		select {
		case <-h.done:
			h.cmd = nil
		case <-time.After(30 * time.Second):
			t.Fatalf("host %s's daemon did not exit after its stores stopped", h.name)
		}
	}
}
