package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"umstore/adminhttp"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storehost"
)

const runUsage = `Usage: umstored run --deployment FILE --host NAME --data-dir DIR [flags]

Runs every store that the deployment places on host NAME, in this process,
each in DIR/<store name>. A store with state rejoins its group; an empty store
asks the other members of its group what they hold and bootstraps only a
brand-new group (every member empty). SIGINT or SIGTERM stops the stores
gracefully (a leader hands over leadership first).

The stores run the deployment file's policy (retention, timeouts, lock,
snapshots, leader placement). A flag below overrides the file for this
daemon only, with a warning: its stores then run another policy than the
rest of their groups, which their leaders report. A file whose layout cannot
keep publishing when one host is lost is refused, with the planner's
failure analysis, unless --accept-unsafe-layout is given.

Each store holds an exclusive lock on its data directory. A second process
for the same stores fails at once naming the holder, unless it is started
with --standby: then it waits and takes the stores over when the holder
exits or dies (a hot standby on shared storage). On shared storage where
flock cannot be trusted, use --lock lease on every process of the host.

Flags:
`

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` written by umstored plan (required)")
	host := fs.String("host", "", "name of this host in the deployment (required)")
	dataDir := fs.String("data-dir", "", "directory for this host's stores (required)")
	standby := fs.Bool("standby", false, "if another process holds a store's data directory, wait and take the store over when it exits (a hot standby on shared storage)")
	acceptUnsafe := fs.Bool("accept-unsafe-layout", false, "run a deployment whose layout stops publishing when some single host is lost (the planner would refuse it)")
	flags := defaultStoreFlags()
	flags.bind(fs, true)
	adminAddr := fs.String("admin-addr", "", "address for /healthz, /readyz, /v1/status and the status page (default: none)")
	pprofOn := fs.Bool("pprof", false, "also serve Go's profiler under /debug/pprof/ on the admin address (for performance work: whoever reaches the address can read the process's profiles and stacks)")
	debugClock := fs.Bool("debug-clock", false, "also serve /debug/clock on the admin address, through which a POST offset=DURATION steps this process's wall clock (for fault testing only: the stores write its times into their logs)")
	allowedHosts := fs.StringSlice("admin-allowed-host", nil, "also answer admin requests whose Host header is this `NAME` (a proxy's name; repeat or separate by commas; \"*\" for any). Always answered: IP addresses, localhost, this machine's host name and the deployment's host addresses; others get 421, against DNS rebinding")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *pprofOn && *adminAddr == "" {
		return cli.UsageError(stderr, "umstored run", "--pprof serves the profiler on the admin address: give --admin-addr too")
	}
	if *debugClock && *adminAddr == "" {
		return cli.UsageError(stderr, "umstored run", "--debug-clock serves /debug/clock on the admin address: give --admin-addr too")
	}
	if *deployment == "" || *host == "" || *dataDir == "" {
		fmt.Fprintln(stderr, "umstored run: --deployment, --host and --data-dir are required")
		fs.Usage()
		return 2
	}
	if err := flags.Validate(); err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 2
	}
	log, err := cli.Logger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 2
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 1
	}
	if a := placement.Analyze(d); !a.SurvivesAnyHostLoss {
		if !*acceptUnsafe {
			fmt.Fprintf(stderr, "umstored run: refusing %s: with this layout, losing some single host stops publishing.\n\n%s\nRe-plan the deployment (umstored plan lays groups out so that either of two hosts can be lost), or give --accept-unsafe-layout to run it anyway.\n", *deployment, a.Render())
			return 1
		}
		log.Warn("running a deployment whose layout stops publishing when some single host is lost (--accept-unsafe-layout); see umstored plan", "deployment", *deployment)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	policy, err := overPolicy(fs, d.Policy, log)
	if err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 2
	}
	cfg := flags.config(policy)
	cfg.Lock.Standby = *standby
	if err := cfg.Lock.Validate(); err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 2
	}
	if *standby {
		log.Info("standby: each store waits for its data directory's lock and takes over when the holder exits", "lock", cfg.Lock.Mode)
	}
	adminOpts := adminhttp.Options{Pprof: *pprofOn, Clock: *debugClock, Log: log, AllowedHosts: *allowedHosts}
	var waiting *adminhttp.StandbyServer
	if *standby && *adminAddr != "" {
		// While it waits, the standby says so on its admin address.
		if waiting, err = adminhttp.StartStandby(*adminAddr, d, *host, log, adminOpts); err != nil {
			fmt.Fprintln(stderr, "umstored run:", err)
			return 1
		}
		*adminAddr = waiting.Addr // the full server takes the same port over
		log.Info("standby status page", "url", "http://"+waiting.Addr+"/")
	}
	h, err := storehost.Start(ctx, d, *host, *dataDir, cfg, log)
	if waiting != nil {
		waiting.Close()
	}
	if err != nil && ctx.Err() != nil {
		log.Info("stopped while waiting")
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "umstored run:", err)
		return 1
	}
	hosts := storehost.Hosts{h}
	if *adminAddr != "" {
		srv, err := adminhttp.Start(*adminAddr, d, hosts, log, adminOpts)
		if err != nil {
			h.Stop()
			fmt.Fprintln(stderr, "umstored run:", err)
			return 1
		}
		defer srv.Close()
		log.Info("status page", "url", "http://"+srv.Addr+"/")
	}
	if failed := h.Failed(); len(failed) > 0 {
		log.Warn("stores started, some could not (see above)", "host", *host, "stores", len(h.Stores()), "failed", failed, "data_dir", *dataDir)
	} else {
		log.Info("stores started", "host", *host, "stores", len(h.Stores()), "data_dir", *dataDir)
	}
	return serve(ctx, hosts, log)
}

// serve runs the stores until SIGINT/SIGTERM or until every one has
// stopped. Exit code 1 when a store stopped itself (already logged), so
// that a supervisor notices.
func serve(ctx context.Context, hosts storehost.Hosts, log *slog.Logger) int {
	if err := hosts.Serve(ctx, log); err != nil {
		return 1
	}
	return 0
}
