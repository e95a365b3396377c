package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/testpki"
)

// A deployment file with a security section: the daemons serve TLS and
// require the token; umpub and umrcv given the deployment file find the CA
// and token through it; a client that only knows the stores' addresses is
// refused with a message saying what it lacks.
func TestSecureDeploymentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	dir := t.TempDir()
	testpki.New(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("letmein\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	// plan wrote a security section naming the member secret; add TLS and
	// the clients' token to it.
	planned, err := os.ReadFile(deploy)
	if err != nil {
		t.Fatal(err)
	}
	secured := strings.Replace(string(planned), "security:\n", "security:\n  tls: {ca: ca.pem, cert: host.pem, key: host-key.pem}\n  token-file: token\n", 1)
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
	waitFor(t, 60*time.Second, "all six stores are up over TLS", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	sum := publishJSON(t, bin, deploy, "secure", 100)
	if sum.Stable != 100 {
		t.Fatalf("umpub over TLS: %+v", sum)
	}
	out, errOut, code := runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "secure")
	if code != 0 || strings.Count(out, "\n") != 100 {
		t.Fatalf("umrcv over TLS: exit %d, %d lines, %s", code, strings.Count(out, "\n"), errOut)
	}
	store := fmt.Sprintf("127.0.0.2:%d", base+1011)
	_, errOut, code = runTool(t, bin, "umpub", "--store", store+":0:1", "--store", fmt.Sprintf("127.0.0.3:%d:0:2", base+1022),
		"--source", "intruder", "--tls-ca", filepath.Join(dir, "ca.pem"), "--timeout", "10s")
	if code == 0 || !strings.Contains(errOut, "not authorised") {
		t.Fatalf("umpub without the token: exit %d, stderr %q; want a refusal naming the token", code, errOut)
	}
}
