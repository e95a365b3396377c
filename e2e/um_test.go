package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/testpki"
	"umstore/placement"
)

// umStoreList writes the deployment's stores as a UM store list: --store
// IP:port:RegID:GroupIDX, GroupIDX from 0 (group 1 is GroupIDX 0).
func umStoreList(t *testing.T, deploy string, regID int) []string {
	t.Helper()
	d, err := placement.Load(deploy)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, r := range d.Stores() {
		args = append(args, "--store", fmt.Sprintf("%s:%d:%d", r.ClientAddr(), regID, r.Group-1))
	}
	return args
}

// umpub and umrcv driven with UM store lists against `umstored dev`: RegID
// 0, GroupIDX 0 and 1 (refused as "not 1..64" before), --store-name
// through the deployment, --store-group checked, a static RegID, a
// DomainID other than 0.
func TestUMStoreLists(t *testing.T) {
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deploy := filepath.Join(data, "deployment.yaml")
	stores := umStoreList(t, deploy, 0)

	args := append([]string{"umpub", "--source", "um", "--count", "500", "--size", "40", "--json", "--store-group", "0:3", "--store-group", "1:3"}, stores...)
	out, errOut, code := runTool(t, bin, args...)
	if code != 0 {
		t.Fatalf("umpub with a UM store list: exit %d\n%s\n%s", code, out, errOut)
	}
	var sum struct {
		pubSummary
		GroupsConfirmed []uint64 `json:"groups_confirmed"`
		Session         string   `json:"session"`
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Stable != 500 || sum.FirstSeq != 1 || sum.LastSeq != 500 || len(sum.GroupsConfirmed) != 2 {
		t.Fatalf("umpub summary %+v", sum)
	}

	// Each GroupIDX is one group: reading GroupIDX 1 alone (the second
	// group of the list) gives everything too.
	for _, g := range []string{"1", "2"} {
		args := append([]string{"umrcv", "--source", "um", "--json", "--group", g}, stores...)
		out, errOut, code := runTool(t, bin, args...)
		if code != 0 || strings.Count(out, "\n") != 500 {
			t.Fatalf("umrcv --group %s with the store list: exit %d, %d lines\n%s", g, code, strings.Count(out, "\n"), errOut)
		}
	}

	// Stores named through the deployment, one group only (GroupIDX 7).
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "um", "--json",
		"--store-name", "G2S1:0:7", "--store-name", "G2S2:0:7", "--store-name", "G2S3:0:7", "--store-group", "7:3")
	if code != 0 || strings.Count(out, "\n") != 500 {
		t.Fatalf("umrcv --store-name: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}

	// A store list that does not add up is refused before connecting.
	args = append([]string{"umpub", "--source", "um", "--store-group", "0:2"}, stores...)
	if _, errOut, code := runTool(t, bin, args...); code != 2 || !strings.Contains(errOut, "more than --store-group 0:2") {
		t.Fatalf("umpub with a wrong --store-group: exit %d, %s", code, errOut)
	}

	// A static RegID is the publisher's session; a second run resumes.
	static := umStoreList(t, deploy, 4242)
	for i, first := range []uint64{501, 511} {
		args := append([]string{"umpub", "--source", "um", "--count", "10", "--json"}, static...)
		out, errOut, code := runTool(t, bin, args...)
		if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || code != 0 {
			t.Fatalf("umpub run %d with RegID 4242: exit %d (%v)\n%s\n%s", i+1, code, err, out, errOut)
		}
		if !strings.HasPrefix(sum.Session, "regid:4242#") || sum.FirstSeq != first || sum.Stable != 10 {
			t.Fatalf("umpub run %d with RegID 4242: %+v, want session regid:4242#EPOCH from %d", i+1, sum, first)
		}
	}

	// A DomainID other than 0 is accepted (it was refused): recorded and
	// logged, not routed on; the stores are reached at their addresses.
	var domains []string
	for i := 0; i < len(stores); i += 2 {
		domains = append(domains, stores[i], "7:"+stores[i+1])
	}
	args = append([]string{"umpub", "--source", "um-domain", "--count", "10", "--json", "--log-level", "info"}, domains...)
	out, errOut, code = runTool(t, bin, args...)
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || code != 0 || sum.Stable != 10 {
		t.Fatalf("umpub with DomainID 7: exit %d, %+v (%v)\n%s", code, sum, err, errOut)
	}
	if n := strings.Count(errOut, "DomainID recorded, not routed"); n != 6 || !strings.Contains(errOut, "domain_id=7") {
		t.Fatalf("umpub with DomainID 7 logs %d stores' DomainIDs, want 6:\n%s", n, errOut)
	}
	args = append([]string{"umrcv", "--source", "um-domain", "--json"}, domains...)
	if out, errOut, code := runTool(t, bin, args...); code != 0 || strings.Count(out, "\n") != 10 {
		t.Fatalf("umrcv with DomainID 7: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}
}

// pythonWithMsgpack returns a python3 that can import msgpack: Debian's
// (where apt installs python3-msgpack; .ci/run does), else the first on
// PATH.
func pythonWithMsgpack(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import msgpack").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with msgpack (apt-get install python3-msgpack; .ci/run installs it)")
	return ""
}

// runPython runs `python3 -m umstore ARGS` from clients/python.
func runPython(t *testing.T, py string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-m", "umstore"}, args...)...)
	cmd.Dir = filepath.Join("..", "clients", "python")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("python3 -m umstore %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// checkLines checks n JSON lines {"seq":N,"payload":"<base64>"}, in order
// from 1, each payload what umpub (and the Python client) generate:
// "SOURCE #N " padded with dots to size bytes.
func checkLines(t *testing.T, who, out, source string, n, size int) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%s printed %d lines, want %d", who, len(lines), n)
	}
	for i, l := range lines {
		var m struct {
			Seq     uint64 `json:"seq"`
			Payload string `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s line %d is not JSON: %q", who, i+1, l)
		}
		p, err := base64.StdEncoding.DecodeString(m.Payload)
		head := fmt.Sprintf("%s #%d ", source, i+1)
		if err != nil || m.Seq != uint64(i+1) || len(p) != size || !strings.HasPrefix(string(p), head) || strings.Trim(string(p[len(head):]), ".") != "" {
			t.Fatalf("%s line %d: seq %d payload %q, want seq %d %q...", who, i+1, m.Seq, p, i+1, head)
		}
	}
}

// The Python client, written from docs/protocol.md, against `umstored
// dev`: what it publishes umrcv reads, and what umpub published it reads.
func TestPythonClientInterop(t *testing.T) {
	py := pythonWithMsgpack(t)
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deploy := filepath.Join(data, "deployment.yaml")

	out, errOut, code := runPython(t, py, "publish", "--deployment", deploy, "--source", "py", "--count", "700", "--size", "50", "--json")
	if code != 0 {
		t.Fatalf("python publish: exit %d\n%s\n%s", code, out, errOut)
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || sum.Stable != 700 || sum.FirstSeq != 1 || sum.LastSeq != 700 {
		t.Fatalf("python publish summary %+v (%v)\n%s", sum, err, out)
	}
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "py", "--json")
	if code != 0 {
		t.Fatalf("umrcv of the Python client's messages: exit %d\n%s", code, errOut)
	}
	checkLines(t, "umrcv", out, "py", 700, 50)

	// A restarted Python publisher resumes after what the groups hold.
	out, errOut, code = runPython(t, py, "publish", "--deployment", deploy, "--source", "py", "--count", "1", "--json")
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || code != 0 || sum.FirstSeq != 701 {
		t.Fatalf("second python publish: exit %d, %+v (%v)\n%s", code, sum, err, errOut)
	}

	out, errOut, code = runTool(t, bin, "umpub", "--deployment", deploy, "--source", "go", "--count", "900", "--size", "80", "--json")
	if code != 0 {
		t.Fatalf("umpub: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runPython(t, py, "receive", "--deployment", deploy, "--source", "go", "--json")
	if code != 0 {
		t.Fatalf("python receive of umpub's messages: exit %d\n%s", code, errOut)
	}
	checkLines(t, "python receive", out, "go", 900, 80)

	// One group alone, and a range past the end named with exit 1.
	out, errOut, code = runPython(t, py, "receive", "--deployment", deploy, "--source", "go", "--json", "--group", "2")
	if code != 0 || strings.Count(out, "\n") != 900 {
		t.Fatalf("python receive --group 2: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}
	_, errOut, code = runPython(t, py, "receive", "--deployment", deploy, "--source", "go", "--from", "899", "--to", "905")
	if code != 1 || !strings.Contains(errOut, "901-905") {
		t.Fatalf("python receive past the end: exit %d, %q; want 1 naming 901-905", code, errOut)
	}
}

// The Python client with the deployment's token and TLS (two `umstored
// run` hosts, as TestSecureDeploymentEndToEnd): it finds the CA and the
// token through the deployment file, and without the token it is refused.
func TestPythonClientOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	py := pythonWithMsgpack(t)
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	testpki.New(t, d.dir)
	if err := os.WriteFile(filepath.Join(d.dir, "token"), []byte("letmein\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planned, err := os.ReadFile(d.deploy)
	if err != nil {
		t.Fatal(err)
	}
	secured := strings.Replace(string(planned), "security:\n", "security:\n  tls: {ca: ca.pem, cert: host.pem, key: host-key.pem}\n  token-file: token\n", 1)
	if err := os.WriteFile(d.deploy, []byte(secured), 0o644); err != nil {
		t.Fatal(err)
	}
	d.startAll(t)

	out, errOut, code := runPython(t, py, "publish", "--deployment", d.deploy, "--source", "tls", "--count", "200", "--size", "30", "--json")
	if code != 0 {
		t.Fatalf("python publish over TLS: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", d.deploy, "--source", "tls", "--json")
	if code != 0 {
		t.Fatalf("umrcv over TLS: exit %d\n%s", code, errOut)
	}
	checkLines(t, "umrcv", out, "tls", 200, 30)
	out, errOut, code = runPython(t, py, "receive", "--deployment", d.deploy, "--source", "tls", "--json")
	if code != 0 {
		t.Fatalf("python receive over TLS: exit %d\n%s", code, errOut)
	}
	checkLines(t, "python receive", out, "tls", 200, 30)

	_, errOut, code = runPython(t, py, "publish", "--store", fmt.Sprintf("127.0.0.2:%d", d.base+1011), "--source", "intruder",
		"--tls-ca", filepath.Join(d.dir, "ca.pem"), "--timeout", "10")
	if code == 0 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("python publish without the token: exit %d, stderr %q; want a refusal", code, errOut)
	}
}
