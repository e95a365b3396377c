package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"umstore/placement"
)

// Exit codes of `umstored plan`.
const (
	planExitOK      = 0 // deployment file written
	planExitRefused = 1 // unsafe request refused, or the file could not be written
	planExitUsage   = 2 // bad flags or arguments
)

const planUsageHead = `Usage: umstored plan --host NAME=ADDRESS --host NAME=ADDRESS [flags]

Lays the stores of a deployment out over hosts, prints the layout and what
losing each host would do, and writes the deployment file that
"umstored run", umpub and umrcv read. With --format systemd it also writes
one systemd unit per host, umstored-NAME.service, that runs
"umstored run" for that host as the user umstore, hardened, restarting on
failure (the comment at the top of each unit explains why that is safe).

Every group is one Raft cluster of an odd number (at least 3) of stores, and
publishers send every message to every group. With two hosts and two groups of
three, the stores are laid out 2+1 / 1+2 (A: G1S1 G1S2 G2S1, B: G1S3 G2S2
G2S3), so that losing either host leaves one group with a quorum and
publishing goes on. With three or more hosts, no host holds a majority of any
group.

Unsafe requests are refused with an explanation on stderr and nothing is
written: fewer than 3 or an even number of stores per group, a single host,
or a layout where losing one host leaves no group with a quorum (such as two
hosts and one group).

Flags:
`

const planUsageTail = `
Ports: store n of group g listens on raft port BASE+10*g+n and client port
BASE+1000+10*g+n, so with the default base G1S1 uses 14011 and 15011.

Units: --units-dir and the --unit-* flags apply only with --format systemd.
The --unit-* paths are paths on the hosts where the units run, not on this
machine. Each unit runs "umstored run --deployment PATH --host NAME
--data-dir DIR --admin-addr ADDRESS" as the user umstore, which must exist;
the steps to install the units are printed when they are written, and in
docs/operations.md.

Member secret: beside the deployment file, plan writes (or keeps, if it is
there) NAME.member-secret, mode 0600, and the deployment names it
(security.member-secret-file). Every raft connection between two stores
proves that both hold it. Copy it to every host that runs stores, readable
only by the stores' user; publishers, receivers and operators never need it.
A deployment file without one (written before it existed) still runs, with
a warning; add one with
  umstored plan --add-member-secret --deployment FILE [--force]
then copy both files to every host and restart every host.

Examples:
  umstored plan --host A=10.0.0.1 --host B=10.0.0.2
  umstored plan --host A=10.0.0.1 --host B=10.0.0.2 --format systemd --out dist/deployment.yaml
  umstored plan --host A=10.0.0.1 --host B=10.0.0.2 --host C=10.0.0.3 --out /etc/umstore/deployment.yaml
  umstored plan --host A=127.0.0.2 --host B=127.0.0.3 --groups 3 --base-port 20000 --json

A host replaced by a server at another address: over the running
deployment, print what changes and write the new file with
  umstored plan --deployment FILE --host NAME=NEW_ADDRESS --out NEW_FILE
("umstored plan --deployment FILE --help" says what to do next).

An existing deployment file or unit is never replaced without --force:
plan refuses and writes nothing.

Exit status: 0 when the files are written, 1 when the request is refused as
unsafe, a file exists (without --force) or cannot be written, 2 for bad
flags.
`

// planOutput is what `umstored plan --json` prints: one JSON object.
type planOutput struct {
	Deployment *placement.Deployment `json:"deployment"`
	Layout     string                `json:"layout"`
	Analysis   *placement.Analysis   `json:"analysis"`
	File       string                `json:"file"`
	Units      []string              `json:"units,omitempty"` // with --format systemd
	// MemberSecret is the member secret file beside File.
	MemberSecret string `json:"member_secret"`
}

// Formats of `umstored plan --format`.
const (
	planFormatYAML    = "yaml"    // the deployment file only
	planFormatSystemd = "systemd" // the deployment file and one unit per host
)

// planFlags are the flags of `umstored plan` for a new deployment.
type planFlags struct {
	hostArgs []string
	req      placement.Request
	out      string
	asJSON   bool
	format   string
	unitsDir string
	unit     unitOptions
	force    bool
}

// bind declares the flags on fs, bound to f.
func (f *planFlags) bind(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.hostArgs, "host", nil, "a host that runs stores, as `NAME=ADDRESS` (repeat once per host; at least two),\ne.g. --host A=10.0.0.1 --host B=store-b.example.net --host C=[::1]")
	fs.IntVar(&f.req.Groups, "groups", placement.DefaultGroups, "`N` store groups; publishers send every message to every group")
	fs.IntVar(&f.req.StoresPerGroup, "stores-per-group", placement.DefaultStoresPerGroup, "`N` stores in each group: an odd number, at least 3, at most 9")
	fs.IntVar(&f.req.BasePort, "base-port", placement.DefaultBasePort, "`PORT` where the port numbering starts (see Ports below), e.g. --base-port 20000")
	fs.StringVar(&f.req.Name, "name", placement.DefaultName, "`NAME` of the deployment, recorded in the file")
	fs.StringVarP(&f.out, "out", "o", "deployment.yaml", "`FILE` to write the deployment to; an existing file is kept unless --force is given")
	fs.BoolVar(&f.force, "force", false, "replace an existing deployment file (and, with --format systemd, existing units), atomically")
	fs.StringVar(&f.format, "format", planFormatYAML, "`FORMAT` of the output: yaml writes the deployment file alone; systemd also writes\none systemd unit per host, umstored-NAME.service (see Units below)")
	fs.StringVar(&f.unitsDir, "units-dir", "", "`DIR` to write the units to (default: the directory of --out)")
	fs.StringVar(&f.unit.Binary, "unit-binary", defaultUnitBinary, "`PATH` of umstored on the hosts")
	fs.StringVar(&f.unit.DeploymentPath, "unit-deployment-path", defaultUnitDeploymentPath, "`PATH` of the deployment file on the hosts")
	fs.StringVar(&f.unit.DataDir, "unit-data-dir", defaultUnitDataDir, "`DIR` on the hosts for the stores' data: the only place the units let umstored write")
	fs.StringVar(&f.unit.AdminAddr, "unit-admin-addr", defaultUnitAdminAddr, "`ADDRESS` of each host's status page, /healthz and /readyz; \"\" for none")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object {deployment, layout, analysis, file, units} instead of text")
}

// check turns the parsed flags into the planner's request, and returns
// what is wrong with them for the usage error, or "".
func (f *planFlags) check(fs *pflag.FlagSet) string {
	if fs.NArg() > 0 {
		return fmt.Sprintf("unexpected argument %q (hosts are given with --host NAME=ADDRESS)", fs.Arg(0))
	}
	if len(f.hostArgs) == 0 {
		return "no hosts: give each host that runs stores with --host NAME=ADDRESS, e.g. --host A=10.0.0.1 --host B=10.0.0.2"
	}
	for _, arg := range f.hostArgs {
		h, err := parseHostFlag(arg)
		if err != nil {
			return err.Error()
		}
		f.req.Hosts = append(f.req.Hosts, h)
	}
	// Zero would mean "default" to the planner; on the command line it is a
	// mistake.
	switch req := f.req; {
	case req.Groups < 1:
		return fmt.Sprintf("--groups %d: give at least 1 group (2 is the usual choice)", req.Groups)
	case req.StoresPerGroup < 1:
		return fmt.Sprintf("--stores-per-group %d: give an odd number of at least 3", req.StoresPerGroup)
	case req.BasePort < 1 || req.BasePort > 65535:
		return fmt.Sprintf("--base-port %d: give a port in 1..65535, e.g. 14000", req.BasePort)
	case strings.TrimSpace(req.Name) == "":
		return "--name is empty: give the deployment a name, e.g. --name orders"
	}
	return checkPlanFormat(fs, f.format, f.unit)
}

// cmdPlan implements `umstored plan ARGS...` and returns the exit code.
func cmdPlan(args []string, stdout, stderr io.Writer) int {
	if hasFlag(args, "--add-member-secret") {
		return cmdPlanAddMemberSecret(args, stdout, stderr)
	}
	if hasFlag(args, "--deployment") {
		return cmdPlanReaddress(args, stdout, stderr) // plan_readdress.go
	}
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // help is printed below, on stdout
	fs.SortFlags = false
	var f planFlags
	f.bind(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, planUsageHead+fs.FlagUsages()+planUsageTail)
			return planExitOK
		}
		return planUsageError(stderr, err.Error())
	}
	if msg := f.check(fs); msg != "" {
		return planUsageError(stderr, msg)
	}
	d, analysis, err := placement.Plan(f.req)
	if err != nil {
		return planRefused(stdout, stderr, err, f.asJSON)
	}
	written, err := f.write(d, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	return f.report(stdout, stderr, d, analysis, written)
}

// planWritten is what plan wrote: the member secret file beside the
// deployment (and whether it is new), and the units.
type planWritten struct {
	secret  string
	created bool
	units   []string
}

// write writes the deployment file, the member secret beside it and, with
// --format systemd, the units (warnings about them go to stderr). The units are rendered before anything is
// written, so that a problem with them leaves no half-written output.
func (f *planFlags) write(d *placement.Deployment, stderr io.Writer) (planWritten, error) {
	var units []unitFile
	if f.format == planFormatSystemd {
		if f.unitsDir == "" {
			f.unitsDir = filepath.Dir(f.out)
		}
		var warnings []string
		var err error
		if units, warnings, err = prepareUnits(d, f.unitsDir, f.unit); err != nil {
			return planWritten{}, err
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "umstored plan: warning: %s\n", w)
		}
	}
	if err := refuseOverwrite(append([]string{f.out}, pathsOf(units)...), f.force); err != nil {
		return planWritten{}, err
	}
	d.Security = &placement.Security{MemberSecretFile: placement.MemberSecretFileFor(f.out)}
	if err := d.WriteFile(f.out); err != nil {
		return planWritten{}, err
	}
	secret, created, err := memberSecretBeside(f.out)
	if err != nil {
		return planWritten{}, fmt.Errorf("wrote %s, but %v", f.out, err)
	}
	if err := writeUnits(units); err != nil {
		return planWritten{}, err
	}
	return planWritten{secret: secret, created: created, units: pathsOf(units)}, nil
}

// report prints the layout, the failure analysis and what to do next, as
// text or as one JSON object.
func (f *planFlags) report(stdout, stderr io.Writer, d *placement.Deployment, analysis *placement.Analysis, w planWritten) int {
	layout := placement.RenderLayout(d)
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(planOutput{Deployment: d, Layout: layout, Analysis: analysis, File: f.out, Units: w.units, MemberSecret: w.secret}); err != nil {
			fmt.Fprintf(stderr, "umstored plan: writing JSON: %v\n", err)
			return planExitRefused
		}
		fmt.Fprintf(stderr, "wrote %s\n", strings.Join(append([]string{f.out}, w.units...), ", "))
		fmt.Fprintf(stderr, "%s\n", secretNote(w.secret, w.created))
		return planExitOK
	}
	fmt.Fprintf(stdout, "Layout of %q:\n\n%s\n%s\n", d.Name, layout, analysis.Render())
	fmt.Fprintf(stdout, "Wrote %s: %d groups of %d stores on %d hosts.\n", f.out, len(d.Groups), f.req.StoresPerGroup, len(d.Hosts))
	fmt.Fprintf(stdout, "%s\n", secretNote(w.secret, w.created))
	if f.format == planFormatSystemd {
		printUnitSteps(stdout, f.out, w.secret, w.units, f.unit)
		return planExitOK
	}
	fmt.Fprintf(stdout, "Copy both to every host that runs stores (clients need only %s) and start each host's stores with\n  umstored run --deployment %s --host %s --data-dir DIR\n", filepath.Base(f.out), f.out, d.Hosts[0].Name)
	return planExitOK
}

// checkPlanFormat checks --format and the flags that only apply to the
// systemd format, and returns what is wrong, or "".
func checkPlanFormat(fs *pflag.FlagSet, format string, unit unitOptions) string {
	switch format {
	case planFormatSystemd:
		if err := unit.check(); err != nil {
			return err.Error()
		}
		return ""
	case planFormatYAML:
		for _, name := range []string{"units-dir", "unit-binary", "unit-deployment-path", "unit-data-dir", "unit-admin-addr"} {
			if fs.Changed(name) {
				return fmt.Sprintf("--%s applies only to the systemd units: add --format systemd", name)
			}
		}
		return ""
	default:
		return fmt.Sprintf("--format %q: want yaml (the deployment file) or systemd (the deployment file and one systemd unit per host)", format)
	}
}

// printUnitSteps tells the operator where the units went and how to install
// them; docs/operations.md has the whole procedure.
func printUnitSteps(w io.Writer, out, secret string, unitPaths []string, unit unitOptions) {
	fmt.Fprintf(w, "Wrote %d systemd units:\n", len(unitPaths))
	for _, p := range unitPaths {
		fmt.Fprintf(w, "  %s\n", p)
	}
	fmt.Fprintf(w, `On each host, as root (see docs/operations.md), with NAME the host's name:
  useradd --system --user-group --home-dir %[3]s --shell /usr/sbin/nologin %[4]s
  install -d -o %[4]s -g %[4]s -m 0750 %[3]s
  install -D -m 0644 %[1]s %[2]s
  install -D -m 0600 -o %[4]s -g %[4]s %[6]s %[7]s
  install -m 0755 umstored %[5]s
  install -m 0644 umstored-NAME.service /etc/systemd/system/
  systemctl daemon-reload && systemctl enable --now umstored-NAME.service
  umstored status --deployment %[2]s
`, out, unit.DeploymentPath, unit.DataDir, unitUser, unit.Binary, secret, filepath.Join(filepath.Dir(unit.DeploymentPath), filepath.Base(secret)))
}

// parseHostFlag splits NAME=ADDRESS. Brackets around an IPv6 address are
// accepted and removed.
func parseHostFlag(arg string) (placement.Host, error) {
	name, addr, ok := strings.Cut(arg, "=")
	name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
	if !ok || name == "" || addr == "" {
		return placement.Host{}, fmt.Errorf("--host %q: give NAME=ADDRESS, e.g. --host A=10.0.0.1", arg)
	}
	if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
		addr = addr[1 : len(addr)-1]
	}
	return placement.Host{Name: name, Address: addr}, nil
}

func planUsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "umstored plan: %s\nRun 'umstored plan --help' for the flags and examples.\n", msg)
	return planExitUsage
}

// planRefused reports a refusal: the reason and explanation on stderr and,
// with --json, the refusal as a JSON object on stdout.
func planRefused(stdout, stderr io.Writer, err error, asJSON bool) int {
	var r *placement.Refusal
	if !errors.As(err, &r) {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	fmt.Fprintf(stderr, "umstored plan: %s\n\n%s\n\nNo deployment file was written.\n", r.Error(), r.Explanation)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]*placement.Refusal{"refusal": r})
	}
	if errors.Is(err, placement.ErrInvalidRequest) {
		return planExitUsage
	}
	return planExitRefused
}

// refuseOverwrite returns an error naming the first of paths that exists,
// unless force: a deployment file in use holds the stores' addresses, and
// replacing it by mistake (another --base-port, another host list) would
// make the next restart split the groups.
func refuseOverwrite(paths []string, force bool) error {
	if force {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists; nothing was written. Give another --out (or --units-dir), or --force to replace it", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check whether %s exists: %w", p, err)
		}
	}
	return nil
}

// hasFlag reports whether plan's arguments (before any "--") give the flag
// name, which selects a mode of plan with flags of its own:
// --add-member-secret (plan_secret.go), --deployment to change an
// existing deployment (plan_readdress.go).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
