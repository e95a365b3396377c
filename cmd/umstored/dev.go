package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"umstore/adminhttp"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/storehost"
)

const devUsage = `Usage: umstored dev [--data-dir DIR] [--base-port N] [--client-base-port N] [--admin-addr ADDR]

Runs the headline topology in one process on 127.0.0.1: two groups of three
stores laid out 2+1 / 1+2 over two "hosts" A and B, as "umstored plan" lays
them out on two real hosts. Writes DIR/deployment.yaml for umpub, umrcv and
"umstored status", prints the next commands to try, and serves a status page.
Data stays in DIR across runs; Ctrl-C stops the stores gracefully. The
policy flags below are written into the deployment file's policy section,
which every store runs.

Flags:
`

func cmdDev(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("dev", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "umstore-dev", "directory for the stores' data and the deployment file")
	basePort := fs.Int("base-port", placement.DefaultBasePort, "raft ports are BASE+10*group+store, client ports BASE+1000+10*group+store (unless --client-base-port)")
	clientBase := fs.Int("client-base-port", 0, "client ports are CLIENT_BASE+10*group+store (0: BASE+1000), for when BASE+1000 and up are taken")
	adminAddr := fs.String("admin-addr", "127.0.0.1:9100", "address of the status page, /healthz, /readyz and /v1/status (empty: none)")
	pprofOn := fs.Bool("pprof", false, "also serve Go's profiler under /debug/pprof/ on the admin address")
	flags := defaultStoreFlags()
	flags.bind(fs, false)
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	fs.Usage = func() { fmt.Fprint(stderr, devUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *pprofOn && *adminAddr == "" {
		return cli.UsageError(stderr, "umstored dev", "--pprof serves the profiler on the admin address: give --admin-addr too")
	}
	if err := flags.Validate(); err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 2
	}
	log, err := cli.Logger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 2
	}
	if *basePort < 1 || *basePort+1000+10*2+3 > 65535 {
		fmt.Fprintf(stderr, "umstored dev: --base-port %d leaves no room for the ports (1..%d)\n", *basePort, 65535-1023)
		return 2
	}
	if *clientBase < 0 || *clientBase+10*2+3 > 65535 {
		fmt.Fprintf(stderr, "umstored dev: --client-base-port %d leaves no room for the client ports (1..%d, or 0 for BASE+1000)\n", *clientBase, 65535-23)
		return 2
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	d := devDeployment(*basePort, *clientBase)
	if err := d.Validate(); err != nil {
		fmt.Fprintln(stderr, "umstored dev: --base-port and --client-base-port:", err)
		return 2
	}
	d.Policy = flags.policy.WithDefaults() // the flags are the policy: dev owns its file
	if ka, timeout := d.Policy.KeepAliveInterval, d.Policy.SourceActivityTimeout; ka >= timeout {
		d.Policy.KeepAliveInterval = timeout / 3 // a short --source-activity-timeout for a test: keep-alives well within it
	}
	path := filepath.Join(dir, "deployment.yaml")
	if err := checkDevDeployment(path, d, fs.Changed("base-port") || fs.Changed("client-base-port")); err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	// The stores authenticate each other as in production: a member
	// secret beside the deployment file, kept across runs.
	if _, _, err := memberSecretBeside(path); err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	d.Security = &placement.Security{MemberSecretFile: placement.MemberSecretFileFor(path)}
	if err := d.WriteFile(path); err != nil {
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	if d, err = placement.Load(path); err != nil { // so the secret's path resolves beside it
		fmt.Fprintln(stderr, "umstored dev:", err)
		return 1
	}
	cfg := flags.config(d.Policy)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var hosts storehost.Hosts
	for _, h := range d.Hosts {
		hs, err := storehost.Start(ctx, d, h.Name, filepath.Join(dir, h.Name), cfg, log)
		if err != nil {
			hosts.Stop()
			fmt.Fprintln(stderr, "umstored dev:", err)
			return 1
		}
		hosts = append(hosts, hs)
	}
	statusURL := ""
	if *adminAddr != "" {
		srv, err := adminhttp.Start(*adminAddr, d, hosts, log, adminhttp.Options{Pprof: *pprofOn})
		if err != nil {
			hosts.Stop()
			fmt.Fprintln(stderr, "umstored dev:", err)
			return 1
		}
		defer srv.Close()
		statusURL = "http://" + srv.Addr + "/"
	}
	fmt.Fprintf(stdout, "umstored dev: starting 2 groups of 3 stores on 127.0.0.1 (hosts A and B in one process)\n%s", placement.RenderLayout(d))
	waitCtx, cancel := context.WithTimeout(ctx, devLeaderWait)
	err = hosts.WaitLeaders(waitCtx, log)
	cancel()
	if err != nil {
		hosts.Stop()
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintf(stderr, "umstored dev: the groups did not elect leaders within %ds; see the log above (run with --log-level info)\n", int(devLeaderWait/time.Second))
		return 1
	}
	fmt.Fprintf(stdout, `
ready.
  deployment:  %[1]s
  data:        %[2]s
  status page: %[3]s

try, in another terminal:
  umpub --deployment %[1]s --source demo --count 1000
  umrcv --deployment %[1]s --source demo
  umstored status --deployment %[1]s

Ctrl-C stops the stores; their data stays in %[2]s.
`, path, dir, orNone(statusURL))
	return serve(ctx, hosts, log)
}

// devLeaderWait bounds dev's wait for every group's leader; a variable so
// that a test of a run that cannot start need not wait the whole minute.
var devLeaderWait = 60 * time.Second

// sameLayout reports whether two deployments place the same stores on the
// same addresses and ports: what the stores' raft configurations depend
// on. The security section (dev's own member secret), the policy and the
// preferred hosts may change from run to run.
func sameLayout(a, b *placement.Deployment) bool {
	strip := func(d *placement.Deployment) []byte {
		c := *d
		c.Security, c.Policy = nil, placement.Policy{}
		c.Groups = slices.Clone(d.Groups)
		for i := range c.Groups {
			c.Groups[i].PreferredHost = ""
		}
		out, err := c.Marshal()
		if err != nil {
			return nil
		}
		return out
	}
	x, y := strip(a), strip(b)
	return x != nil && bytes.Equal(x, y)
}

// devStoresHoldState reports whether any store of d under dir (dev's data
// directory: DIR/<host>/<store>) holds state. It errs on the side of
// state: a store directory that cannot be read counts as holding some.
func devStoresHoldState(dir string, d *placement.Deployment) bool {
	for _, ref := range d.Stores() {
		empty, err := storegroup.DataDirIsEmpty(filepath.Join(dir, ref.Store.Host, ref.Store.Name))
		if err != nil || !empty {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "(none: --admin-addr is empty)"
	}
	return s
}

// checkDevDeployment refuses to reuse a data directory whose stores were
// created with other addresses: their raft configurations name the old
// ports, and restarting them elsewhere would split the groups. A file
// whose stores never got any state (a run that failed to start, say on a
// port in use) does not bind the directory: dev writes a new one.
func checkDevDeployment(path string, want *placement.Deployment, portChosen bool) error {
	old, err := placement.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		if !devStoresHoldState(filepath.Dir(path), want) {
			return nil
		}
		return fmt.Errorf("%s exists but cannot be read (%v); remove the directory to start afresh", path, err)
	}
	if sameLayout(old, want) || !devStoresHoldState(filepath.Dir(path), old) {
		return nil
	}
	base := old.Groups[0].Stores[0].RaftPort - 11
	flags := fmt.Sprintf("--base-port %d", base)
	if client := old.Groups[0].Stores[0].ClientPort - 11; client != base+1000 {
		flags += fmt.Sprintf(" --client-base-port %d", client)
	}
	if !portChosen {
		return fmt.Errorf("%s was created with %s; run again with %s, or use another --data-dir", filepath.Dir(path), flags, flags)
	}
	return fmt.Errorf("%s holds stores created with %s, not the ports given; use %s or another --data-dir", filepath.Dir(path), flags, flags)
}

// devDeployment is dev's deployment: placement.Dev's, with the client
// ports moved to clientBase+10*group+store when clientBase is not 0.
func devDeployment(basePort, clientBase int) *placement.Deployment {
	d := placement.Dev("127.0.0.1", basePort)
	if clientBase == 0 {
		return d
	}
	for g := range d.Groups {
		for s := range d.Groups[g].Stores {
			st := &d.Groups[g].Stores[s]
			st.ClientPort = clientBase + st.RaftPort - basePort
		}
	}
	return d
}
