package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// The Python client's durable receiver (receive --name) against `umstored
// dev`: it resumes after what it printed last time, and shares its name's
// position with umrcv --name, both ways.
func TestPythonDurableReceiver(t *testing.T) {
	py := pythonWithMsgpack(t)
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deploy := filepath.Join(data, "deployment.yaml")

	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "dur", "--count", "500", "--size", "40", "--json"); code != 0 {
		t.Fatalf("umpub: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := runPython(t, py, "receive", "--deployment", deploy, "--source", "dur", "--name", "py", "--to", "200", "--json")
	if code != 0 {
		t.Fatalf("python receive --name --to 200: exit %d\n%s", code, errOut)
	}
	checkLines(t, "python receive --name, first run", out, "dur", 200, 40)
	out, errOut, code = runPython(t, py, "receive", "--deployment", deploy, "--source", "dur", "--name", "py", "--json")
	if code != 0 || strings.Count(out, "\n") != 300 || !strings.HasPrefix(out, `{"seq": 201,`) && !strings.HasPrefix(out, `{"seq":201,`) {
		t.Fatalf("python receive --name, second run: exit %d, %d lines from %.30q; want 201..500\n%s", code, strings.Count(out, "\n"), out, errOut)
	}
	// umrcv under the same name finds nothing left; under a name the Go
	// receiver used, Python resumes after it.
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "dur", "--name", "py", "--json")
	if code != 0 || out != "" {
		t.Fatalf("umrcv --name py after Python consumed everything: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}
	if _, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "dur", "--name", "go", "--to", "450", "--json"); code != 0 {
		t.Fatalf("umrcv --name go --to 450: exit %d\n%s", code, errOut)
	}
	out, errOut, code = runPython(t, py, "receive", "--deployment", deploy, "--source", "dur", "--name", "go", "--json")
	if code != 0 || strings.Count(out, "\n") != 50 {
		t.Fatalf("python receive --name go after umrcv read to 450: exit %d, %d lines, want 50\n%s", code, strings.Count(out, "\n"), errOut)
	}
}
