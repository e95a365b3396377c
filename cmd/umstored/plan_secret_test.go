package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/internal/memberauth"
	"umstore/placement"
)

// readSecret loads a member secret file and checks it is private.
func readSecret(t *testing.T, path string) []byte {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("member secret: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, st.Mode().Perm())
	}
	s, err := memberauth.LoadSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// plan writes a member secret beside the deployment file and names it;
// planning again keeps it (hosts running with it must not be cut off); a
// file there that is not a secret is refused.
func TestPlanWritesTheMemberSecret(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "prod.yaml")
	args := []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--out", out}
	code, stdout, stderr := runPlan(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	secretPath := filepath.Join(dir, "prod.member-secret")
	first := readSecret(t, secretPath)
	d, err := placement.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Security == nil || d.Security.MemberSecretFile != "prod.member-secret" {
		t.Fatalf("the deployment names %+v, want prod.member-secret", d.Security)
	}
	if !strings.Contains(stdout, "Wrote the member secret "+secretPath) || !strings.Contains(stdout, "clients need only prod.yaml") {
		t.Errorf("stdout does not tell where the secret goes:\n%s", stdout)
	}

	// Planning again over the same file needs --force; the secret stays.
	again := append(append([]string{}, args...), "--force")
	code, stdout, stderr = runPlan(t, again...)
	if code != 0 {
		t.Fatalf("again: exit %d: %s", code, stderr)
	}
	if again := readSecret(t, secretPath); string(again) != string(first) {
		t.Error("planning again replaced the member secret")
	}
	if !strings.Contains(stdout, "Kept the member secret") {
		t.Errorf("stdout does not say the secret was kept:\n%s", stdout)
	}

	if err := os.WriteFile(secretPath, []byte("not a secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runPlan(t, again...)
	if code != 1 || !strings.Contains(stderr, secretPath) || !strings.Contains(stderr, "remove") {
		t.Errorf("a junk secret file: exit %d, stderr %s; want a refusal naming the file", code, stderr)
	}
}

// --add-member-secret gives an old deployment file its secret, keeping
// the operator's file as it was otherwise; it refuses to replace a secret
// without --force.
func TestPlanAddMemberSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deployment.yaml")
	d, _, err := placement.Plan(placement.Request{Hosts: []placement.Host{{Name: "A", Address: "10.0.0.1"}, {Name: "B", Address: "10.0.0.2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append([]byte("# hand-edited: keep this comment\n"), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	add := func(extra ...string) (int, string, string) {
		return runPlan(t, append([]string{"--add-member-secret", "--deployment", path}, extra...)...)
	}
	code, stdout, stderr := add()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	secretPath := filepath.Join(dir, "deployment.member-secret")
	first := readSecret(t, secretPath)
	loaded, err := placement.Load(path)
	if err != nil || loaded.Security == nil || loaded.Security.MemberSecretFile != "deployment.member-secret" {
		t.Fatalf("after --add-member-secret: %+v, %v", loaded, err)
	}
	text, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(text), "# hand-edited: keep this comment\n") {
		t.Errorf("the operator's comment is gone:\n%s", text)
	}
	for _, want := range []string{"umstored stop --deployment " + path, "every host", "clients need only"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	code, _, stderr = add()
	if code != 1 || !strings.Contains(stderr, "already names a member secret") || !strings.Contains(stderr, "--force") {
		t.Errorf("a second time: exit %d, stderr %s; want a refusal pointing at --force", code, stderr)
	}
	if again := readSecret(t, secretPath); string(again) != string(first) {
		t.Error("a refused run changed the secret")
	}
	if code, _, stderr = add("--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if replaced := readSecret(t, secretPath); string(replaced) == string(first) {
		t.Error("--force kept the old secret")
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--add-member-secret"}, 2, "--deployment FILE"},
		{[]string{"--add-member-secret", "--deployment", filepath.Join(dir, "missing.yaml")}, 1, "missing.yaml"},
		{[]string{"--add-member-secret", "--deployment", path, "--host", "A=1.2.3.4"}, 2, "unknown flag: --host"},
	} {
		code, _, stderr := runPlan(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	code, stdout, _ = runPlan(t, "--add-member-secret", "--help")
	if code != 0 || !strings.Contains(stdout, "start every host again") || !strings.Contains(stdout, "--force") {
		t.Errorf("--add-member-secret --help: exit %d:\n%s", code, stdout)
	}
}
