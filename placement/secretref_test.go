package placement

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemberSecretFileFor(t *testing.T) {
	for in, want := range map[string]string{
		"deployment.yaml":             "deployment.member-secret",
		"/etc/umstore/prod.yml":       "prod.member-secret",
		"dist/demo":                   "demo.member-secret",
		"a.b.yaml":                    "a.b.member-secret",
		filepath.Join("x", ".hidden"): ".hidden.member-secret",
	} {
		if got := MemberSecretFileFor(in); got != want {
			t.Errorf("MemberSecretFileFor(%q) = %q, want %q", in, got, want)
		}
	}
}

// Adding the member secret reference keeps the rest of an operator's file:
// comments, the flow style of hosts and stores, existing security keys.
func TestWithMemberSecretFile(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join("testdata", "valid", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	commented := "# our production deployment\n" + string(spec)
	cases := []struct {
		name string
		in   string
		want []string // substrings of the result
	}{
		{"no security section", commented, []string{"# our production deployment\n", "  - {name: A, address: 127.0.0.2}\n", "security:\n  member-secret-file: demo.member-secret\n"}},
		{"a token already", string(spec) + "security:\n  token-file: token # the clients' token\n", []string{"  token-file: token # the clients' token\n  member-secret-file: demo.member-secret\n"}},
		{"an old reference is replaced", string(spec) + "security:\n  member-secret-file: old.secret\n", []string{"  member-secret-file: demo.member-secret\n"}},
		{"an empty security key", string(spec) + "security:\n", []string{"security:\n  member-secret-file: demo.member-secret\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := WithMemberSecretFile([]byte(tc.in), "demo.yaml", "demo.member-secret")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("result lacks %q:\n%s", w, out)
				}
			}
			d, err := Parse(out, "demo.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if d.Security == nil || d.Security.MemberSecretFile != "demo.member-secret" || len(d.Groups) != 2 {
				t.Fatalf("parsed back: %+v", d.Security)
			}
			if strings.Contains(string(out), "old.secret") {
				t.Errorf("the old reference survived:\n%s", out)
			}
		})
	}
	for name, in := range map[string]string{
		"not a deployment":       "just a string\n",
		"security not a mapping": string(spec) + "security: yes\n",
		"invalid deployment":     "version: 1\nname: x\n",
	} {
		if _, err := WithMemberSecretFile([]byte(in), "bad.yaml", "x.member-secret"); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%s: err %v, want an error naming bad.yaml", name, err)
		}
	}
}
