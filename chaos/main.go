package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// options are the harness's flags.
type options struct {
	Schedules         int
	Seed              int64
	Start             int
	JSON              bool
	FaultsPerSchedule int
	Messages          int
	Rate              int
	Sources           int
	Keep              bool
	Partitions        bool
	SlowDisks         bool
	PublisherState    bool
	LongOutages       bool
	DefaultSnapshots  bool
	PacedSource       bool
	Bin               string
	PreviousBin       string
	WorkDir           string
	Timeout           time.Duration
	ScheduleTimeout   time.Duration
	RestoreTimeout    time.Duration
	LogLevel          string
	Kinds             []FaultKind
	// Lock is the stores' lock mode, lockFlock or lockLease (lockmode.go).
	Lock string
}

const usageHead = `Usage: go run ./chaos [flags]

Runs schedules of faults against a real two-host umstore deployment on
127.0.0.2 and 127.0.0.3 (one "umstored run" per host), with publishers and
following receivers, and checks after each schedule that no acknowledged
message was lost, no sequence number was reused, no group was bootstrapped
over existing state, no two empty stores of a group caught up together,
every store reaches a replaced host's stores where they listen now, and
every receiver saw every stable message once, in order, and only payloads
exactly as published, every durable receiver killed and restarted under
its name saw every stable message at least once, in order, with no gap
and a bounded redelivery, no store released a receiver-paced message
before its paced receiver consumed it, nothing a non-member sent took
effect, no leader freed the source of a publisher that was still running
for silence, released messages for age or forgot a receiver (whatever a
clock-jump did to the daemons' wall clocks), no store's data directory
was locked while the process that held it before was still running, and
no daemon exited by itself. Exit status 0 when every schedule passed, 1
on a violation or a lost message, 2 on bad usage or when the harness
itself failed.

Flags:
`

func main() {
	if code, ok := runChild(); ok {
		os.Exit(code)
	}
	os.Exit(cmdMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runChild runs this program as one of the harness's children when the
// environment says so (a publisher or durable receiver incarnation, the
// stranger) and returns its exit status; ok is false for the harness
// itself.
func runChild() (code int, ok bool) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		return childMain(cfg), true
	}
	if cfg := os.Getenv(strangerEnv); cfg != "" {
		return strangerMain(cfg), true
	}
	if cfg := os.Getenv(receiverEnv); cfg != "" {
		return receiverChildMain(cfg), true
	}
	return 0, false
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("chaos", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Schedules, "schedules", 3, "how many schedules to run")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the random schedules (default: from the clock; printed at the start)")
	fs.IntVar(&o.Start, "start", 0, "index of the first schedule (to replay schedule N of a seed alone: --start N --schedules 1)")
	fs.BoolVar(&o.JSON, "json", false, "print the totals as one JSON object on the last line")
	fs.IntVar(&o.FaultsPerSchedule, "faults-per-schedule", 4, "faults drawn for each schedule")
	fs.IntVar(&o.Messages, "messages", 100000, "most messages one publisher incarnation sends")
	fs.IntVar(&o.Rate, "rate", 200, "messages per second each publisher sends")
	fs.IntVar(&o.Sources, "sources", 2, "sources published (one publisher child, one follower and one durable receiver child each)")
	fs.BoolVar(&o.Keep, "keep", false, "keep every schedule's logs and data directories (they are always kept on a violation)")
	fs.BoolVar(&o.Partitions, "partitions", true, "cut the link between the hosts with iptables (needs iptables and root)")
	fs.BoolVar(&o.SlowDisks, "slow-disks", true, "give each host a loop-mounted disk, to slow its writes with a blkio cgroup and to cut its power (lost-writes) (needs root, loop devices, mkfs.ext4, cgroup v1 blkio)")
	fs.BoolVar(&o.PublisherState, "publisher-state", true, "give each publisher a state file kept across its incarnations (publisher.Config.StateFile); without it a publisher restarted while the group that acknowledged its last messages is unreachable may reuse their sequence numbers (the README's known window of intergroup any)")
	fs.BoolVar(&o.LongOutages, "long-outages", false, "make half of the host crashes and pauses last 35-45s, beyond source-activity-timeout (slower schedules)")
	fs.BoolVar(&o.DefaultSnapshots, "default-snapshots", false, "run the stores with umstored's default snapshot settings (a snapshot every 8192 entries: never, in a schedule) instead of small ones drawn for each schedule (a snapshot every 64-256 entries, checked every 1-2s, 16-64 entries kept after it), which make wiped and far-behind members catch up by snapshot install")
	fs.BoolVar(&o.PacedSource, "paced-source", true, "publish the last source (of two or more) with blocking receiver-paced persistence, its durable receiver a paced receiver, and the stores allowing it (--allow-receiver-paced-persistence, an explicit --receiver-activity-timeout 30s); the checker then verifies no store released a paced message before the receiver consumed it")
	fs.StringVar(&o.Bin, "bin", "", "directory with a prebuilt umstored (default: build it)")
	fs.StringVar(&o.PreviousBin, "previous-bin", "", "directory with a build of the previous release's umstored (RELEASES; git archive REV | tar -x -C SRC, then go build ./cmd/umstored there): draws upgrade-host, whose schedules plan and start the deployment on it")
	fs.StringVar(&o.WorkDir, "workdir", "", "where schedules keep their files (default: a new temporary directory)")
	fs.DurationVar(&o.Timeout, "timeout", 0, "bound on the whole run (default: 6m per schedule)")
	fs.DurationVar(&o.ScheduleTimeout, "schedule-timeout", 6*time.Minute, "bound on one schedule")
	fs.DurationVar(&o.RestoreTimeout, "restore-timeout", 90*time.Second, "how long the deployment may take to be whole again after a fault")
	fs.StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.Lock, "lock", lockFlock, "how the stores lock their data directories (umstored run --lock): flock, or lease (then pause-host and slow-disk are not drawn: a lease holder that cannot renew in time stops its stores by design)")
	kinds := fs.StringSlice("kinds", nil, "draw only these faults (comma-separated: "+kindNames()+"; default all that the machine allows)")
	fs.Usage = func() { fmt.Fprint(stderr, usageHead); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := checkLockMode(o.Lock); err != nil {
		return o, err
	}
	for _, k := range *kinds {
		spec := kindOf(FaultKind(k))
		if spec == nil {
			return o, fmt.Errorf("--kinds: unknown fault %q (known: %s)", k, kindNames())
		}
		if !spec.available(planConfig{Partitions: o.Partitions, SlowDisks: o.SlowDisks, LeaseLocks: o.Lock == lockLease, PreviousBin: o.PreviousBin != ""}) {
			return o, fmt.Errorf("--kinds names %s, which --partitions=false, --slow-disks=false, --lock lease or no --previous-bin turns off", k)
		}
		o.Kinds = append(o.Kinds, FaultKind(k))
	}
	if !fs.Changed("seed") {
		o.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	switch {
	case o.Schedules < 1:
		return o, errors.New("--schedules must be at least 1")
	case o.Start < 0:
		return o, errors.New("--start must not be negative")
	case o.FaultsPerSchedule < 0:
		return o, errors.New("--faults-per-schedule must not be negative")
	case o.Messages < 1 || o.Rate < 1:
		return o, errors.New("--messages and --rate must be positive")
	case o.Sources < 1 || o.Sources > 8:
		return o, errors.New("--sources must be 1..8")
	case o.RestoreTimeout <= 0 || o.ScheduleTimeout <= 0:
		return o, errors.New("--restore-timeout and --schedule-timeout must be positive")
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Duration(o.Schedules) * o.ScheduleTimeout
	}
	return o, nil
}

func cmdMain(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.LogLevel)); err != nil {
		fmt.Fprintf(stderr, "chaos: --log-level %q: want debug, info, warn or error\n", opts.LogLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once; children die with it
	}()

	fmt.Fprintf(stdout, "chaos: seed %d, schedules %d..%d, %d faults each, %s locks (replay with --seed %d)\n",
		opts.Seed, opts.Start, opts.Start+opts.Schedules-1, opts.FaultsPerSchedule, opts.Lock, opts.Seed)
	totals, err := run(ctx, opts, stdout, log)
	printTotals(stdout, opts, totals)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	if totals.Violations > 0 || totals.Lost > 0 {
		return 1
	}
	return 0
}

// run prepares the binaries and the work directory and runs every
// schedule in turn, printing one line per schedule.
func run(ctx context.Context, opts options, stdout io.Writer, log *slog.Logger) (*Totals, error) {
	start := time.Now()
	totals := newTotals(opts)
	defer func() { totals.Seconds = time.Since(start).Seconds() }()

	exe, err := os.Executable()
	if err != nil {
		return totals, fmt.Errorf("find this program to run publisher children: %w", err)
	}
	workDir := opts.WorkDir
	if workDir == "" {
		workDir, err = os.MkdirTemp("", "umstore-chaos-")
		if err != nil {
			return totals, err
		}
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return totals, err
	}
	workDir, _ = filepath.Abs(workDir)
	defer func() {
		// Leave the work directory only if something in it was kept.
		os.RemoveAll(filepath.Join(workDir, "bin"))
		_ = os.Remove(workDir)
	}()

	env := &runEnv{opts: opts, exe: exe, workDir: workDir, log: log, bin: opts.Bin}
	if env.bin == "" {
		env.bin = filepath.Join(workDir, "bin")
		log.Info("building umstored", "into", env.bin)
		if err := buildBinaries(ctx, env.bin); err != nil {
			return totals, err
		}
	}
	if _, err := os.Stat(filepath.Join(env.bin, "umstored")); err != nil {
		return totals, fmt.Errorf("--bin %s: %w", env.bin, err)
	}
	if opts.Partitions {
		env.part, err = newPartitioner(log)
		if err != nil {
			return totals, err
		}
		defer env.part.heal()
	}
	if opts.SlowDisks {
		if err := diskSupport(); err != nil {
			return totals, fmt.Errorf("%w (or run with --slow-disks=false)", err)
		}
		removeStaleDisks(log)
	}

	for i := opts.Start; i < opts.Start+opts.Schedules; i++ {
		if ctx.Err() != nil {
			return totals, fmt.Errorf("stopped before schedule %d: %w", i, ctx.Err())
		}
		res := runSchedule(ctx, env, i)
		totals.add(res)
		printSchedule(stdout, opts, res)
		if res.Interrupted {
			return totals, fmt.Errorf("interrupted during schedule %d: %w", i, ctx.Err())
		}
	}
	return totals, nil
}
