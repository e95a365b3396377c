package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
)

func runPlan(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cmdPlan(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanWritesSpecLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	code, stdout, stderr := runPlan(t, "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--name", "demo", "--out", path)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"host A (127.0.0.2)      host B (127.0.0.3)\n  G1S1  G1S2              G1S3\n  G2S1                    G2S2  G2S3\n",
		"If host A is lost (G1S1, G1S2, G2S1 stop):",
		"group 2: 2 of 3 stores left, keeps its quorum",
		`publishing with "any": goes on`,
		"Wrote " + path,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "placement", "testdata", "valid", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The SPEC example, with each group's preferred host (the one holding
	// its majority), and the reference to the member secret plan writes
	// beside it.
	planned := strings.Replace(string(want), "  - index: 1\n", "  - index: 1\n    preferred-host: A\n", 1)
	planned = strings.Replace(planned, "  - index: 2\n", "  - index: 2\n    preferred-host: B\n", 1)
	planned += "security:\n  member-secret-file: deployment.member-secret\n"
	if string(got) != planned {
		t.Errorf("deployment file differs from the SPEC example with its preferred hosts and member secret:\n%s", got)
	}
}

func TestPlanJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.yaml")
	code, stdout, stderr := runPlan(t, "--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--host", "C=[::1]",
		"--groups", "3", "--stores-per-group", "5", "--base-port", "20000", "--out", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got struct {
		Deployment placement.Deployment `json:"deployment"`
		Layout     string               `json:"layout"`
		Analysis   placement.Analysis   `json:"analysis"`
		File       string               `json:"file"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Error("more than one JSON value on stdout")
	}
	if len(got.Deployment.Groups) != 3 || len(got.Deployment.Groups[0].Stores) != 5 || got.Deployment.Groups[0].Stores[0].RaftPort != 20011 {
		t.Errorf("deployment: %+v", got.Deployment)
	}
	if got.Deployment.Hosts[2].Address != "::1" {
		t.Errorf("brackets not removed: %q", got.Deployment.Hosts[2].Address)
	}
	if !strings.HasPrefix(got.Layout, "host A (10.0.0.1)") || !got.Analysis.SurvivesAnyHostLoss || got.File != path {
		t.Errorf("layout %q survives %v file %q", got.Layout, got.Analysis.SurvivesAnyHostLoss, got.File)
	}
	if _, err := placement.Load(path); err != nil {
		t.Errorf("written file does not load: %v", err)
	}
}

func TestPlanRefusesUnsafeRequests(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"one store per group", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--stores-per-group", "1"}, 1,
			[]string{"refused: 1 store per group; a group needs at least 3", "sequence\nnumber 0", "No deployment file was written."}},
		{"two stores per group", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--stores-per-group", "2"}, 1,
			[]string{"2 stores per group; a group needs at least 3"}},
		{"even group size", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--stores-per-group", "4"}, 1,
			[]string{"even number", "3 or 5"}},
		{"one host", []string{"--host", "A=10.0.0.1"}, 1, []string{"only one host", "at least two hosts"}},
		{"two hosts one group", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--groups", "1"}, 1,
			[]string{"losing host A leaves no group with a quorum", "--groups 2"}},
		{"port range", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--base-port", "65000"}, 1,
			[]string{"beyond 65535"}},
		{"duplicate host", []string{"--host", "A=10.0.0.1", "--host", "A=10.0.0.2"}, 2, []string{`host "A" is given twice`}},
		{"no hosts", nil, 2, []string{"no hosts", "--host NAME=ADDRESS"}},
		{"host without address", []string{"--host", "A", "--host", "B=10.0.0.2"}, 2, []string{`--host "A": give NAME=ADDRESS`}},
		{"bad address", []string{"--host", "A=10.0.0.1:80", "--host", "B=10.0.0.2"}, 2, []string{"without a port"}},
		{"zero groups", []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--groups", "0"}, 2, []string{"--groups 0"}},
		{"unknown flag", []string{"--hosts", "A=10.0.0.1"}, 2, []string{"unknown flag: --hosts", "--help"}},
		{"stray argument", []string{"--host", "A=10.0.0.1", "B=10.0.0.2"}, 2, []string{`unexpected argument "B=10.0.0.2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "deployment.yaml")
			code, stdout, stderr := runPlan(t, append(tt.args, "--out", path)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout should be empty without --json:\n%s", stdout)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a deployment file was written (stat: %v)", err)
			}
		})
	}
}

func TestPlanRefusalJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	code, stdout, stderr := runPlan(t, "--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--groups", "1", "--json", "--out", path)
	if code != 1 || !strings.Contains(stderr, "no group with a quorum") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
	var got struct {
		Refusal placement.Refusal `json:"refusal"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Refusal.Code != "no-surviving-group" {
		t.Errorf("refusal JSON %q: %v", stdout, err)
	}
}

func TestPlanHelp(t *testing.T) {
	code, stdout, _ := runPlan(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--host", "--groups", "--stores-per-group", "--base-port", "--name", "--out", "--json", "Examples:", "umstored plan --host A=10.0.0.1 --host B=10.0.0.2", "2+1 / 1+2"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}

func TestPlanOutIntoMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "deployment.yaml")
	code, _, stderr := runPlan(t, "--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--out", path)
	if code != 1 || !strings.Contains(stderr, "writing deployment file") {
		t.Errorf("exit %d stderr %s", code, stderr)
	}
}

// An existing deployment file is kept unless --force is given: plan says
// so, writes nothing and exits 1; with --force it replaces the file.
func TestPlanRefusesToOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	old := []byte("# the deployment the stores run with\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--out", path}
	code, stdout, stderr := runPlan(t, hosts...)
	if code != 1 || !strings.Contains(stderr, path+" exists; nothing was written") || !strings.Contains(stderr, "--force") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and a refusal naming the file and --force", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != string(old) {
		t.Fatalf("the existing file was replaced:\n%s", got)
	}
	code, _, stderr = runPlan(t, append(hosts, "--force")...)
	if code != 0 {
		t.Fatalf("--force: exit %d\n%s", code, stderr)
	}
	if _, err := placement.Load(path); err != nil {
		t.Errorf("--force did not write the deployment: %v", err)
	}
}
