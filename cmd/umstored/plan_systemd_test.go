package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the current output")

func defaultUnitOptions() unitOptions {
	return unitOptions{
		Binary:         defaultUnitBinary,
		DeploymentPath: defaultUnitDeploymentPath,
		DataDir:        defaultUnitDataDir,
		AdminAddr:      defaultUnitAdminAddr,
	}
}

func specExample(t *testing.T) *placement.Deployment {
	t.Helper()
	d, err := placement.Load(filepath.Join("..", "..", "placement", "testdata", "valid", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestUnitGolden compares host A's unit of the specification's example
// with testdata/umstored-A.service.golden. After a deliberate change, run
// go test ./cmd/umstored -run TestUnitGolden -update and review the diff.
func TestUnitGolden(t *testing.T) {
	got, err := renderUnit(specExample(t), "A", defaultUnitOptions())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "umstored-A.service.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("unit differs from %s (run with -update if the change is intended):\n%s", golden, got)
	}
}

func TestUnitContent(t *testing.T) {
	d := specExample(t)
	unit, err := renderUnit(d, "B", defaultUnitOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := string(unit)
	for _, want := range []string{
		"\nExecStart=/usr/local/bin/umstored run --deployment /etc/umstore/deployment.yaml --host B --data-dir /var/lib/umstore --admin-addr 127.0.0.1:9100\n",
		"\nDescription=umstore stores of host B (G1S3 G2S2 G2S3), deployment demo\n",
		"\nUser=umstore\n", "\nGroup=umstore\n",
		"\nProtectSystem=strict\n", "\nReadWritePaths=/var/lib/umstore\n", "\nStateDirectory=umstore\n",
		"\nProtectHome=true\n", "\nPrivateTmp=true\n", "\nNoNewPrivileges=true\n", "\nCapabilityBoundingSet=\n",
		"\nRestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n", "\nLimitNOFILE=65536\n",
		"\nKillSignal=SIGTERM\n", "\nTimeoutStopSec=60\n",
		"\nRestart=on-failure\n", "\nRestartSec=5s\n", "\nStartLimitIntervalSec=300\n", "\nStartLimitBurst=5\n",
		"cannot recover group N", "systemctl enable --now umstored-B.service",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("unit lacks %q:\n%s", want, s)
		}
	}
	// The start limit belongs in [Unit]; systemd ignores it in [Service].
	unitSection := s[strings.Index(s, "[Unit]"):strings.Index(s, "[Service]")]
	if !strings.Contains(unitSection, "StartLimitBurst=5") {
		t.Errorf("StartLimitBurst is not in [Unit]:\n%s", unitSection)
	}
	for i, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") || strings.Contains(line, "<no value>") {
			t.Errorf("line %d: %q", i+1, line)
		}
	}
}

func TestUnitOptionsShowInUnit(t *testing.T) {
	o := unitOptions{Binary: "/opt/umstore/bin/umstored", DeploymentPath: "/srv/umstore/deployment.yaml", DataDir: "/srv/umstore/data"}
	unit, err := renderUnit(specExample(t), "A", o)
	if err != nil {
		t.Fatal(err)
	}
	s := string(unit)
	if !strings.Contains(s, "\nExecStart=/opt/umstore/bin/umstored run --deployment /srv/umstore/deployment.yaml --host A --data-dir /srv/umstore/data\n") {
		t.Errorf("ExecStart does not follow the options:\n%s", s)
	}
	if !strings.Contains(s, "\nReadWritePaths=/srv/umstore/data\n") {
		t.Errorf("ReadWritePaths does not follow --unit-data-dir:\n%s", s)
	}
	if strings.Contains(s, "StateDirectory") {
		t.Errorf("StateDirectory set for a data directory outside /var/lib:\n%s", s)
	}
	if _, err := renderUnit(specExample(t), "C", o); err == nil {
		t.Error("a unit was rendered for a host that is not in the deployment")
	}
}

func TestUnitOptionsCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(*unitOptions)
		want   string // in the error; "" for none
	}{
		{"defaults", func(*unitOptions) {}, ""},
		{"no status page", func(o *unitOptions) { o.AdminAddr = "" }, ""},
		{"IPv6 status page", func(o *unitOptions) { o.AdminAddr = "[::1]:9100" }, ""},
		{"relative binary", func(o *unitOptions) { o.Binary = "bin/umstored" }, "--unit-binary"},
		{"space in deployment path", func(o *unitOptions) { o.DeploymentPath = "/etc/um store/d.yaml" }, "--unit-deployment-path"},
		{"specifier in data dir", func(o *unitOptions) { o.DataDir = "/var/lib/%i" }, "--unit-data-dir"},
		{"root data dir", func(o *unitOptions) { o.DataDir = "/" }, "below /"},
		{"admin without port", func(o *unitOptions) { o.AdminAddr = "127.0.0.1" }, "--unit-admin-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultUnitOptions()
			tt.change(&o)
			err := o.check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestPlanSystemdWritesUnits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "deployment.yaml")
	code, stdout, stderr := runPlan(t, "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--name", "demo", "--out", out, "--format", "systemd")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	d, err := placement.Load(out)
	if err != nil {
		t.Fatalf("deployment file: %v", err)
	}
	for _, host := range []string{"A", "B"} {
		path := filepath.Join(dir, unitFileName(host))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("unit of host %s: %v", host, err)
		}
		want, err := renderUnit(d, host, defaultUnitOptions())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from the rendered unit:\n%s", path, got)
		}
		if !strings.Contains(stdout, path) {
			t.Errorf("stdout does not name %s:\n%s", path, stdout)
		}
	}
	if !strings.Contains(stdout, "systemctl enable --now") {
		t.Errorf("stdout lacks the install steps:\n%s", stdout)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("want the deployment file, its member secret and two units in %s, found %d entries", dir, len(entries))
	}
	if !strings.Contains(stdout, "install -D -m 0600 -o umstore -g umstore "+filepath.Join(dir, "deployment.member-secret")+" /etc/umstore/deployment.member-secret\n") {
		t.Errorf("stdout lacks the step that installs the member secret beside the deployment file:\n%s", stdout)
	}
}

func TestPlanSystemdUnitsDirAndJSON(t *testing.T) {
	dir, units := t.TempDir(), t.TempDir()
	out := filepath.Join(dir, "deployment.yaml")
	code, stdout, stderr := runPlan(t, "--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--out", out,
		"--format", "systemd", "--units-dir", units, "--unit-data-dir", "/srv/umstore", "--unit-admin-addr", "", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got planOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	want := []string{filepath.Join(units, "umstored-A.service"), filepath.Join(units, "umstored-B.service")}
	if strings.Join(got.Units, " ") != strings.Join(want, " ") {
		t.Errorf("units %v, want %v", got.Units, want)
	}
	unit, err := os.ReadFile(want[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "--data-dir /srv/umstore\n") {
		t.Errorf("unit ignores --unit-data-dir or --unit-admin-addr:\n%s", unit)
	}
	if _, err := os.Stat(filepath.Join(dir, "umstored-A.service")); !os.IsNotExist(err) {
		t.Errorf("a unit was written next to --out despite --units-dir (stat: %v)", err)
	}
}

func TestPlanFormatErrors(t *testing.T) {
	hosts := []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2"}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"unknown format", []string{"--format", "ini"}, 2, `--format "ini": want yaml`},
		{"unit flag without systemd", []string{"--unit-data-dir", "/srv/umstore"}, 2, "--unit-data-dir applies only to the systemd units"},
		{"units dir without systemd", []string{"--format", "yaml", "--units-dir", "/tmp"}, 2, "--units-dir applies only"},
		{"bad unit path", []string{"--format", "systemd", "--unit-binary", "umstored"}, 2, "--unit-binary"},
		{"missing units dir", []string{"--format", "systemd", "--units-dir", filepath.Join(t.TempDir(), "none")}, 1, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			code, _, stderr := runPlan(t, append(append(hosts, tt.args...), "--out", filepath.Join(dir, "deployment.yaml"))...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q?\n%s", code, tt.code, tt.want, stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%d files written despite the error", len(entries))
			}
		})
	}
}

func TestPlanSystemdWarnsAboutLowPorts(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runPlan(t, "--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--base-port", "100",
		"--format", "systemd", "--out", filepath.Join(dir, "d.yaml"))
	if code != 0 || !strings.Contains(stderr, "warning: store G1S1 listens on a port below 1024") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// An existing unit is kept unless --force is given, and then nothing at
// all is written, not even the deployment file.
func TestPlanSystemdRefusesToOverwriteUnits(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "umstored-B.service")
	if err := os.WriteFile(unit, []byte("# edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--host", "A=10.0.0.1", "--host", "B=10.0.0.2", "--format", "systemd", "--out", filepath.Join(dir, "deployment.yaml")}
	code, _, stderr := runPlan(t, args...)
	if code != 1 || !strings.Contains(stderr, unit+" exists") {
		t.Errorf("exit %d, stderr %q; want 1 naming %s", code, stderr, unit)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the existing unit", len(entries))
	}
	if code, _, stderr := runPlan(t, append(args, "--force")...); code != 0 {
		t.Fatalf("--force: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(unit); strings.Contains(string(got), "edited by hand") {
		t.Error("--force did not replace the unit")
	}
}
