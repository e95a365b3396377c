package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
)

// The operator token comes from the flag, else from the deployment's
// security.operator-token-file (relative to the deployment file), else
// there is none.
func TestOperatorToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("operator.token", "from-the-deployment\n")
	flag := write("other.token", "  from-the-flag  \n")
	empty := write("empty.token", "\n")
	d := placement.Dev("127.0.0.1", 14000)
	d.Security = &placement.Security{OperatorTokenFile: "operator.token"}
	path := filepath.Join(dir, "deployment.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := placement.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		d        *placement.Deployment
		override string
		want     string
		err      string
	}{
		{loaded, "", "from-the-deployment", ""},
		{loaded, flag, "from-the-flag", ""},
		{placement.Dev("127.0.0.1", 14000), "", "", ""},
		{nil, flag, "from-the-flag", ""},
		{loaded, empty, "", "is empty"},
		{loaded, filepath.Join(dir, "missing"), "", "the operator token file (security.operator-token-file or --operator-token-file)"},
	} {
		got, err := OperatorToken(tc.d, tc.override)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("override %q: %q, %v; want %q, error %q", tc.override, got, err, tc.want, tc.err)
		}
	}
}
