package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
)

// A host whose address is a name that does not resolve is refused at once,
// naming the host and the name, not with a listener's "is another store
// using the port?".
func TestRunRefusesAnUnresolvableHostName(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	d.Hosts[1].Address = "store-b.invalid"
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cmdRun([]string{"--deployment", path, "--host", "B", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `umstored run: host B: its address "store-b.invalid" does not resolve`) || strings.Contains(errOut.String(), "another store") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
	}
}

// --pprof without an admin address is a usage error.
func TestRunPprofNeedsAnAdminAddress(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cmdRun([]string{"--deployment", "d.yaml", "--host", "A", "--data-dir", t.TempDir(), "--pprof"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--pprof serves the profiler on the admin address: give --admin-addr too") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
	}
}
