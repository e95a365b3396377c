package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"umstore/placement"
)

// Over a planned deployment, plan --deployment prints what a new address
// for host A changes and writes the new file beside the old one, which it
// leaves alone; the new file names the same member secret.
func TestPlanReaddressWritesTheNewFile(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "deployment.yaml")
	if code, _, stderr := runPlan(t, "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--out", old); code != 0 {
		t.Fatalf("plan: %s", stderr)
	}
	before, _ := os.ReadFile(old)
	neu := filepath.Join(dir, "deployment-new.yaml")
	code, stdout, stderr := runPlan(t, "--deployment", old, "--host", "A=127.0.0.4", "--out", neu)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"host A: 127.0.0.2 -> 127.0.0.4", "store G1S1 (group 1): raft 127.0.0.2:14011, client 127.0.0.2:15011 -> raft 127.0.0.4:14011, client 127.0.0.4:15011", "store G2S1 (group 2)", "umstored run --deployment " + neu + " --host A"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "G1S3") {
		t.Errorf("a store of host B is listed as changed:\n%s", stdout)
	}
	if after, _ := os.ReadFile(old); string(after) != string(before) {
		t.Fatal("the running deployment's file was changed")
	}
	od, _ := placement.Load(old)
	nd, err := placement.Load(neu)
	if err != nil {
		t.Fatal(err)
	}
	if nd.Hosts[0].Address != "127.0.0.4" || nd.Hosts[1] != od.Hosts[1] || !reflect.DeepEqual(nd.Groups, od.Groups) || nd.Security.MemberSecretFile != od.Security.MemberSecretFile {
		t.Fatalf("new file: %+v %+v", nd.Hosts, nd.Security)
	}

	// --json, and the refusals: an existing file without --force, a host
	// that is not there (adding hosts is not supported), nothing to change.
	code, stdout, _ = runPlan(t, "--deployment", old, "--host", "A=127.0.0.5", "--out", filepath.Join(dir, "j.yaml"), "--json")
	var out readdressOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Changes) != 4 || out.Deployment.Hosts[0].Address != "127.0.0.5" {
		t.Fatalf("--json: exit %d\n%s", code, stdout)
	}
	for name, args := range map[string][]string{
		"in place without --force": {"--deployment", old, "--host", "A=127.0.0.4"},
		"an unknown host":          {"--deployment", old, "--host", "C=127.0.0.9", "--out", filepath.Join(dir, "c.yaml")},
		"nothing changes":          {"--deployment", old, "--host", "A=127.0.0.2", "--out", filepath.Join(dir, "n.yaml")},
	} {
		if code, _, stderr := runPlan(t, args...); code != planExitRefused {
			t.Errorf("%s: exit %d, want %d: %s", name, code, planExitRefused, stderr)
		}
	}
	if code, _, _ := runPlan(t, "--deployment", old); code != planExitUsage {
		t.Errorf("no --host: exit %d, want %d", code, planExitUsage)
	}
}
