package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"umstore/placement"

	"umstore/internal/atomicfile"
)

// unitOptions say how the systemd units written by
// `umstored plan --format systemd` run umstored on the hosts. The paths are
// paths on the hosts, not on the machine that runs plan.
type unitOptions struct {
	Binary         string // umstored executable
	DeploymentPath string // where the deployment file is installed
	DataDir        string // parent of the stores' data directories
	AdminAddr      string // status page address; "" for none
}

// Defaults of the --unit-* flags of `umstored plan`.
const (
	defaultUnitBinary         = "/usr/local/bin/umstored"
	defaultUnitDeploymentPath = "/etc/umstore/deployment.yaml"
	defaultUnitDataDir        = "/var/lib/umstore"
	defaultUnitAdminAddr      = "127.0.0.1:9100"
)

// unitUser is the account the units run umstored as; operators create it
// (docs/operations.md) so that the data belongs to a stable user and group.
const unitUser = "umstore"

// unitPathRE is what a path written into a unit may look like: absolute,
// and free of the characters systemd gives a meaning to in unit files
// (whitespace, quotes, backslashes, '%' specifiers, '$' variables, ';').
var unitPathRE = regexp.MustCompile(`^/[A-Za-z0-9._/+@:,=~-]*$`)

// check reports the first option that cannot go into a unit, naming its
// flag and what to give instead.
func (o unitOptions) check() error {
	for _, p := range []struct{ flag, value, example string }{
		{"--unit-binary", o.Binary, defaultUnitBinary},
		{"--unit-deployment-path", o.DeploymentPath, defaultUnitDeploymentPath},
		{"--unit-data-dir", o.DataDir, defaultUnitDataDir},
	} {
		if !unitPathRE.MatchString(p.value) {
			return fmt.Errorf("%s %q: give an absolute path of letters, digits and . _ / + @ : , = ~ -, such as %s", p.flag, p.value, p.example)
		}
		if filepath.Clean(p.value) == "/" {
			return fmt.Errorf("%s %q: give a path below /, such as %s", p.flag, p.value, p.example)
		}
	}
	if o.AdminAddr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(o.AdminAddr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n < 0 || n > 65535 || strings.ContainsAny(host, " \t%$\\\"';") {
		return fmt.Errorf("--unit-admin-addr %q: give HOST:PORT, such as %s, or \"\" for no status page", o.AdminAddr, defaultUnitAdminAddr)
	}
	return nil
}

// unitFileName is the name of host's unit: umstored-<host>.service. Host
// names are letters, digits, '.', '-' and '_' (the deployment file is
// validated), all of which systemd accepts in unit names.
func unitFileName(host string) string {
	return "umstored-" + host + ".service"
}

// unitData is what unitTemplate renders.
type unitData struct {
	unitOptions
	Deployment string
	Host       string
	Unit       string
	Stores     string // the host's store names, space separated
	// StateDirectory is DataDir relative to /var/lib, when it lies below
	// it: systemd then creates it, owned by the unit's user, before start.
	StateDirectory string
	User           string
}

// unitTemplate is one host's unit. The comment block is for the operator
// who finds the file in /etc/systemd/system and wonders why it restarts the
// way it does.
var unitTemplate = template.Must(template.New("unit").Parse(`# {{.Unit}}
#
# Runs the stores of host {{.Host}} ({{.Stores}}) of the umstore
# deployment "{{.Deployment}}". Written by "umstored plan --format systemd":
# plan again rather than edit it, so that every host's unit stays in step.
#
# Before the first start (docs/operations.md has the whole procedure):
#   useradd --system --user-group --home-dir {{.DataDir}} --shell /usr/sbin/nologin {{.User}}
#   install -d -o {{.User}} -g {{.User}} -m 0750 {{.DataDir}}
#   install -D -m 0644 deployment.yaml {{.DeploymentPath}}
#   install -m 0755 umstored {{.Binary}}
#   install -m 0644 {{.Unit}} /etc/systemd/system/
#   systemctl daemon-reload
#   systemctl enable --now {{.Unit}}
#
# Why restarting on failure is safe: umstored itself decides, on every
# start, what each store may do. A store with state rejoins its group. An
# empty store bootstraps a group only when the group is brand new (every
# store of the deployment answers and none of them remembers the group);
# otherwise it joins its group and catches up before it may vote, one empty
# store per group at a time. A group whose stores are all empty while
# another group remembers it is refused ("cannot recover group N: no store
# with state"). A restart re-applies these rules, so it can neither
# bootstrap over existing data nor skip the staged rejoin.
#
# What systemd sees: the process exits on its own only when it cannot start
# at all (deployment file unreadable, host not in it, a port in use, a data
# directory that cannot be opened) or when it crashes. Restart=on-failure
# retries those after RestartSec; the start limit gives up after 5 starts
# in 5 minutes, so a lasting fault leaves the unit "failed" rather than
# restarting in a loop ("systemctl reset-failed" it once fixed).
#
# A store that refuses to start or stops itself does NOT end the process:
# it is logged, "umstored status" shows it as failed, and the host's other
# stores keep serving their groups. Fix the cause, then restart the unit.
# Stopping the unit (SIGTERM) makes each leader hand over leadership and
# closes the stores; if one of them had failed, the process then exits 1
# and the unit is left "failed", so that it is noticed.

[Unit]
Description=umstore stores of host {{.Host}} ({{.Stores}}), deployment {{.Deployment}}
After=network-online.target
Wants=network-online.target
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=simple
User={{.User}}
Group={{.User}}
ExecStart={{.Binary}} run --deployment {{.DeploymentPath}} --host {{.Host}} --data-dir {{.DataDir}}{{if .AdminAddr}} --admin-addr {{.AdminAddr}}{{end}}
Restart=on-failure
RestartSec=5s
KillSignal=SIGTERM
TimeoutStopSec=60
LimitNOFILE=65536
UMask=0027
{{- if .StateDirectory}}
StateDirectory={{.StateDirectory}}
StateDirectoryMode=0750
{{- end}}

# Hardening: the stores write only below {{.DataDir}}, speak only
# TCP, and need no capabilities as long as their ports are above 1023.
ProtectSystem=strict
ReadWritePaths={{.DataDir}}
ProtectHome=true
PrivateTmp=true
PrivateDevices=true
NoNewPrivileges=true
CapabilityBoundingSet=
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=true
RestrictSUIDSGID=true
RestrictRealtime=true
LockPersonality=true
MemoryDenyWriteExecute=true
SystemCallArchitectures=native
ProtectClock=true
ProtectHostname=true
ProtectKernelLogs=true
ProtectKernelTunables=true
ProtectKernelModules=true
ProtectControlGroups=true

[Install]
WantedBy=multi-user.target
`))

// renderUnit writes the systemd unit that runs host's stores.
func renderUnit(d *placement.Deployment, host string, o unitOptions) ([]byte, error) {
	refs := d.StoresOn(host)
	if len(refs) == 0 {
		return nil, fmt.Errorf("the deployment places no stores on host %q, so it needs no unit", host)
	}
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Store.Name
	}
	data := unitData{
		unitOptions: o,
		Deployment:  d.Name,
		Host:        host,
		Unit:        unitFileName(host),
		Stores:      strings.Join(names, " "),
		User:        unitUser,
	}
	if rel, ok := strings.CutPrefix(filepath.Clean(o.DataDir), "/var/lib/"); ok {
		data.StateDirectory = rel
	}
	var b bytes.Buffer
	if err := unitTemplate.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render the unit of host %s: %w", host, err)
	}
	return b.Bytes(), nil
}

// unitFile is a rendered unit and where it goes.
type unitFile struct {
	Path    string
	Content []byte
}

// prepareUnits renders one unit per host of d for the directory dir, which
// must exist, and lists what the operator should know about them (ports the
// units cannot bind). Nothing is written.
func prepareUnits(d *placement.Deployment, dir string, o unitOptions) (files []unitFile, warnings []string, err error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("units directory %s does not exist: create it, or give another --units-dir", dir)
	case err != nil:
		return nil, nil, fmt.Errorf("units directory: %w", err)
	case !st.IsDir():
		return nil, nil, fmt.Errorf("units directory %s is not a directory: give a directory with --units-dir", dir)
	}
	for _, h := range d.Hosts {
		if len(d.StoresOn(h.Name)) == 0 {
			continue
		}
		content, err := renderUnit(d, h.Name, o)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, unitFile{Path: filepath.Join(dir, unitFileName(h.Name)), Content: content})
	}
	for _, ref := range d.Stores() {
		if ref.Store.RaftPort < 1024 || ref.Store.ClientPort < 1024 {
			warnings = append(warnings, fmt.Sprintf("store %s listens on a port below 1024, which the units cannot bind (they grant no capabilities); plan again with --base-port 14000 or another base of at least 1013", ref.Store.Name))
			break
		}
	}
	if _, port, err := net.SplitHostPort(o.AdminAddr); err == nil {
		if n, _ := strconv.Atoi(port); n > 0 && n < 1024 {
			warnings = append(warnings, fmt.Sprintf("--unit-admin-addr %s is a port below 1024, which the units cannot bind; use a port of at least 1024, such as %s", o.AdminAddr, defaultUnitAdminAddr))
		}
	}
	return files, warnings, nil
}

// pathsOf lists where the units go.
func pathsOf(files []unitFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// writeUnits writes each unit atomically (a temporary file renamed over the
// old one), readable by everyone as systemd expects.
func writeUnits(files []unitFile) error {
	for _, f := range files {
		if err := atomicfile.Write(f.Path, f.Content, 0o644); err != nil {
			return fmt.Errorf("writing unit %s: %w (check that the directory is writable, or give another --units-dir)", f.Path, err)
		}
	}
	return nil
}
