// Command bench measures umstore against NATS JetStream on this machine, in
// one run: umstore's real binaries, as `umstored dev` (two groups of three
// stores in one process, fsync before acknowledgement, intergroup "any") and
// as three `umstored run` hosts holding one group of three (as many copies
// as JetStream R3), driven by umpub; and an embedded three-node JetStream
// cluster (R3 file stream), once with sync_always and once with its
// defaults, driven with the same message sizes, counts, concurrency, window
// and random payloads. Runs alternate between the systems; the tables
// report medians and ratios. Optionally: latency at half of umstore's
// maximum load, catch-up of a wiped store against the disk measured in the
// same run, resident memory after retaining 1 GB per group, CPU profiles of
// umstored, and a soak with retention cycling. Last, a table of the goals of
// issues 15 and 26 with the figures of this run.
//
// Issue 26 adds two optional tables. --rates 1000,10000,50000 measures
// latency at fixed offered rates (msgs/s in total; --rate-seconds of
// messages per run): umstore (umstored dev) beside JetStream, both timed
// from when each message was due, so that falling behind the rate counts
// (coordinated omission), with a breakdown of umstore's time by stage read
// from umstored's /metrics (umstore_publish_stage_seconds, before and after
// each run). --sources-list 1,100,1000 measures umstore's throughput with K
// sources (umpub --sources K, --sources-count messages in all per run).
//
//	cd bench && go run . [--runs 3] [--count N] [--sizes 64,1024] [--rates 1000,10000,50000] [--sources-list 1,100,1000] [--catchup] [--memory] [--soak 30m] [--json]
//
// It is its own module so nats-server stays out of umstore's go.mod; it
// uses umstore only through its binaries and their flags.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	var c config
	var sizes, systemList, layouts, rates, sourcesList string
	var soak, soakInterval time.Duration
	flag.IntVar(&c.Runs, "runs", 3, "repetitions of each (size, system); the table reports medians")
	flag.IntVar(&c.Count, "count", 200000, "messages per run, in total over all publishers")
	flag.StringVar(&sizes, "sizes", "64,1024", "message sizes in bytes, comma-separated (at least 8)")
	flag.IntVar(&c.Sources, "sources", 1, "concurrent publishers: umpub --sources K (K sources) / K JetStream connections, one subject each")
	flag.IntVar(&c.Flight, "flight", 4096, "window of unacknowledged messages per publisher: umpub --flight-size and JetStream's async max pending")
	flag.StringVar(&c.Payload, "payload", payloadRandom, "payloads: random (fresh random bytes for every message, both systems: nothing to compress) or text (umpub's \"SOURCE #SEQ ....\" and dots for JetStream, as in earlier reference runs)")
	flag.StringVar(&systemList, "systems", "umstore,umstore-1g,js-sync,js-default", "systems to compare, comma-separated: umstore (umstored dev, two groups of three), umstore-1g (three umstored run hosts, one group of three), js-sync, js-default")
	flag.BoolVar(&c.Throughput, "throughput", true, "run the throughput comparison (--throughput=false: only --rates, --sources-list, --catchup, --memory and/or --soak)")
	flag.BoolVar(&c.HalfLoad, "half-load", true, "also measure latency at half of umstore's median maximum rate, with every system at the same rate")
	flag.StringVar(&rates, "rates", "", "also measure latency at these fixed offered rates, msgs/s in total, comma-separated (issue 26's: 1000,10000,50000; empty: not measured): umstore (with its stage breakdown) and JetStream at every size, timed from when each message was due; umstore 1 group is left out")
	flag.Float64Var(&c.RateSeconds, "rate-seconds", 5, "length of each --rates run in seconds of messages at its rate (count = rate × this, at least 1000)")
	flag.StringVar(&sourcesList, "sources-list", "", "also measure umstore's throughput with K sources for each K of this comma-separated list (e.g. 1,100,1000; empty: not measured): umpub --sources K, flat out; a K umpub refuses becomes a note")
	flag.IntVar(&c.SourcesCount, "sources-count", 200000, "messages per --sources-list run, in total over the K sources")
	flag.IntVar(&c.SourcesSize, "sources-size", 64, "message size of the --sources-list runs")
	flag.StringVar(&c.SourcesConnections, "sources-connections", "", "umpub --connections for the --sources-list runs: shared (one connection per store for all sources) or per-source (empty: umpub's default, shared)")
	flag.BoolVar(&c.Catchup, "catchup", false, "also measure catch-up of a wiped store (umstored run hosts on 127.0.0.2-4) against the disk's sequential bandwidth measured just before")
	flag.IntVar(&c.CatchupMB, "catchup-mb", 1024, "MiB of 1 KiB messages to publish before wiping a host")
	flag.StringVar(&layouts, "catchup-layouts", "1x3,2x3", "layouts for --catchup, comma-separated: 1x3 (one group on three hosts; one follower's host, one store, wiped: the goal's figure), 2x3 (two groups on two hosts; host A, three stores, wiped)")
	flag.IntVar(&c.DiskMiB, "disk-mib", 1024, "MiB per sequential write of the disk test (--catchup)")
	flag.BoolVar(&c.Memory, "memory", false, "also measure umstored's resident memory while retaining --memory-mb per group")
	flag.IntVar(&c.MemoryMB, "memory-mb", 1024, "MiB of 1 KiB messages to retain for --memory")
	flag.DurationVar(&soak, "soak", 0, "also run a soak this long (e.g. 30m): umstored dev with a small retention limit, publishing flat out, a row per --soak-interval")
	flag.DurationVar(&soakInterval, "soak-interval", time.Minute, "length of each of the soak's umpub runs: one row of its table")
	flag.IntVar(&c.SoakSize, "soak-size", 1024, "message size of the soak")
	flag.Float64Var(&c.SoakRate, "soak-rate", 0, "the soak's offered msgs/s (0: flat out)")
	flag.IntVar(&c.SoakRetentionMB, "soak-retention-mb", 128, "the soak's --retention-max-bytes per source, in MiB")
	flag.StringVar(&c.SoakStoreArgs, "soak-store-args", "", "extra flags for the soak's `umstored dev` only, space-separated (e.g. \"--snapshot-interval 10s\")")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "also save a 10 s CPU profile of umstored dev during an extra run at each size to `FILE` (FILE-64B.prof, FILE-1KiB.prof... with several sizes; and .top.txt beside each), and with --catchup a 5 s profile of every host while the wiped one catches up (FILE-1x3-A.prof...)")
	flag.StringVar(&c.StoreArgs, "store-args", "", "extra flags for every `umstored dev` and `umstored run`, space-separated (e.g. \"--snapshot-threshold 256 --trailing-logs 64\" to measure catch-up by repository copy)")
	flag.StringVar(&c.LogStore, "log-store", "", "give every `umstored dev` and `umstored run` --log-store `NAME` (refused if umstored has no such flag)")
	flag.StringVar(&c.Repo, "repo", "..", "the umstore module to build the binaries from")
	flag.StringVar(&c.Dir, "dir", "", "work directory for data and logs (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&c.Keep, "keep", false, "keep the work directory (data and logs) at the end")
	flag.BoolVar(&c.JSON, "json", false, "print the results as one JSON object instead of Markdown")
	flag.StringVar(&c.JSONOut, "json-out", "", "also write the results as JSON to `FILE`")
	flag.Parse()
	if msg := c.parse(sizes, systemList, layouts, soak, soakInterval); msg != "" {
		fmt.Fprintln(os.Stderr, "bench:", msg)
		return 2
	}
	if msg := c.parseLoads(rates, sourcesList); msg != "" {
		fmt.Fprintln(os.Stderr, "bench:", msg)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer stopAllProcs()

	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	work := c.Dir
	if work == "" {
		d, err := os.MkdirTemp("", "umstore-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if c.Keep {
		defer logf("kept %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	res, err := bench(ctx, c, work, logf)
	stopAllProcs()
	if res != nil {
		res.Goals = computeGoals(res)
		if c.JSONOut != "" {
			b, _ := json.MarshalIndent(res, "", "  ")
			if werr := os.WriteFile(c.JSONOut, append(b, '\n'), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "bench:", werr)
			}
		}
		if c.JSON {
			b, _ := json.MarshalIndent(res, "", "  ")
			fmt.Println(string(b))
		} else {
			printMarkdown(os.Stdout, res)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "bench: interrupted")
			return 130
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// parse checks the flags and fills the config's lists; it returns what is
// wrong, or "".
func (c *config) parse(sizes, systemList, layouts string, soak, soakInterval time.Duration) string {
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 8 || n > 1<<20 {
			return fmt.Sprintf("--sizes: %q is not a size of 8 bytes to 1 MiB", f)
		}
		c.Sizes = append(c.Sizes, n)
	}
	for _, f := range strings.Split(systemList, ",") {
		f = strings.TrimSpace(f)
		found := false
		for _, s := range allSystems {
			if s.flag == f {
				c.Systems, found = append(c.Systems, s.name), true
			}
		}
		if !found {
			return fmt.Sprintf("--systems: %q is not one of umstore, umstore-1g, js-sync, js-default", f)
		}
	}
	if c.Catchup {
		for _, f := range strings.Split(layouts, ",") {
			if _, err := layoutByName(strings.TrimSpace(f)); err != nil {
				return "--catchup-layouts: " + err.Error()
			}
			c.CatchupLayouts = append(c.CatchupLayouts, strings.TrimSpace(f))
		}
	}
	switch {
	case c.Runs < 1 || c.Count < 1 || c.Sources < 1 || c.Flight < 1 || c.Count < c.Sources:
		return "--runs, --count, --sources and --flight must be positive, and --count at least --sources"
	case c.Payload != payloadRandom && c.Payload != payloadText:
		return fmt.Sprintf("--payload %q: give random or text", c.Payload)
	case soak < 0 || (soak > 0 && soakInterval < 5*time.Second):
		return "--soak must not be negative, and --soak-interval at least 5s"
	case soak > 0 && (c.SoakSize < 8 || c.SoakSize > 1<<20 || c.SoakRetentionMB < 1 || c.SoakRate < 0):
		return "--soak-size must be 8 bytes to 1 MiB, --soak-retention-mb at least 1 and --soak-rate not negative"
	case c.DiskMiB < 1:
		return "--disk-mib must be at least 1"
	}
	if !c.Catchup {
		c.CatchupMB, c.DiskMiB = 0, 0
	}
	if !c.Memory {
		c.MemoryMB = 0
	}
	if !c.Throughput && !c.Catchup {
		c.CPUProfile = ""
	}
	if !c.Throughput {
		c.HalfLoad = false
	}
	if soak > 0 {
		c.SoakS, c.SoakIntervalS = soak.Seconds(), soakInterval.Seconds()
	} else {
		c.SoakSize, c.SoakRetentionMB, c.SoakStoreArgs, c.SoakRate = 0, 0, "", 0
	}
	return ""
}

func (c config) has(system string) bool {
	for _, s := range c.Systems {
		if s == system {
			return true
		}
	}
	return false
}

func bench(ctx context.Context, c config, work string, logf func(string, ...any)) (*results, error) {
	started := time.Now()
	res := &results{Started: started.UTC().Format(time.RFC3339), Config: c, Machine: describeMachine(work), LoadAvg: []string{loadAvg()}}
	defer func() { res.LoadAvg = append(res.LoadAvg, loadAvg()) }()
	repo, err := filepath.Abs(c.Repo)
	if err != nil {
		return nil, err
	}
	res.Revision = "unknown (not a git checkout)"
	if out, err := exec.Command("git", "-C", repo, "describe", "--always", "--dirty").Output(); err == nil {
		res.Revision = strings.TrimSpace(string(out))
	}
	logf("building umstored, umpub, umrcv in %s (%s)", repo, res.Revision)
	bins, err := buildUmstore(ctx, repo, filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	if c.LogStore != "" {
		if !bins.hasStoreFlag(ctx, "--log-store") {
			return nil, fmt.Errorf("--log-store %s: this umstored has no --log-store flag on dev and run", c.LogStore)
		}
		bins.user = append(bins.user, "--log-store", c.LogStore)
	}
	bins.user = append(bins.user, strings.Fields(c.StoreArgs)...)
	defer func() { res.ElapsedS = time.Since(started).Seconds() }()
	res.StoreArgs = strings.Join(bins.storeArgs(), " ")
	res.UmpubPayload = "--stdin (the bench writes the random payloads)"
	if bins.umpubPayload {
		res.UmpubPayload = "--payload random"
	}
	if c.Payload == payloadText {
		res.UmpubPayload = "--count (umpub's own text payloads)"
	}
	if c.Payload == payloadRandom && !bins.umpubPayload && c.Sources > 1 {
		return res, fmt.Errorf("--payload random with --sources %d needs umpub --payload random, which this umpub lacks (use --sources 1, or --payload text)", c.Sources)
	}

	if c.Throughput || len(c.Rates) > 0 || len(c.SourcesList) > 0 {
		if err := throughputPhase(ctx, c, bins, work, res, logf); err != nil {
			return res, err
		}
	}

	if c.Catchup {
		mb, note := fitDisk(work, c.CatchupMB, 16)
		if note != "" {
			res.Notes = append(res.Notes, "catch-up: "+note)
		}
		for _, name := range c.CatchupLayouts {
			lay, _ := layoutByName(name)
			dir := filepath.Join(work, "catchup-"+name)
			a := catchupArgs{mb: mb, size: 1024, sources: c.Sources, flight: c.Flight, diskMiB: c.DiskMiB, payload: c.Payload, profile: c.CPUProfile}
			cr, err := runCatchup(ctx, bins, dir, lay, a, logf)
			if err != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("catch-up %s failed: %v", name, err))
				if ctx.Err() != nil {
					return res, err
				}
			}
			if cr != nil {
				res.Catchup = append(res.Catchup, cr)
			}
			if !c.Keep {
				_ = os.RemoveAll(dir)
			}
		}
	}
	if c.Memory {
		mb, note := fitDisk(work, c.MemoryMB, 16)
		if note != "" {
			res.Notes = append(res.Notes, "memory: "+note)
		}
		mr, err := runMemory(ctx, bins, filepath.Join(work, "memory"), mb, 1024, c.Sources, c.Flight, c.Payload, logf)
		if err != nil {
			res.Notes = append(res.Notes, "memory test failed: "+err.Error())
			if ctx.Err() != nil {
				return res, err
			}
		}
		res.Memory = mr
		if !c.Keep {
			_ = os.RemoveAll(filepath.Join(work, "memory"))
		}
	}
	if c.SoakS > 0 {
		a := soakArgs{duration: time.Duration(c.SoakS * float64(time.Second)), interval: time.Duration(c.SoakIntervalS * float64(time.Second)),
			size: c.SoakSize, flight: c.Flight, rate: c.SoakRate, retentionBytes: int64(c.SoakRetentionMB) << 20, payload: c.Payload, extra: strings.Fields(c.SoakStoreArgs)}
		if len(bins.keepAll) == 0 {
			res.Notes = append(res.Notes, "soak: this umstored has no --retention-max-bytes: the soak runs without retention cycling")
		}
		sr, err := runSoak(ctx, bins, filepath.Join(work, "soak"), a, logf)
		if err != nil {
			res.Notes = append(res.Notes, "soak failed: "+err.Error())
			if ctx.Err() != nil {
				res.Soak = sr
				return res, err
			}
		}
		res.Soak = sr
	}
	res.ElapsedS = time.Since(started).Seconds()
	return res, nil
}

// fitDisk lowers mb so that factor*mb MiB fits in the free space of dir.
func fitDisk(dir string, mb, factor int) (int, string) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return mb, ""
	}
	free := int(st.Bavail * uint64(st.Bsize) >> 20)
	if mb*factor <= free {
		return mb, ""
	}
	n := max(64, free/factor)
	return n, fmt.Sprintf("only %d MiB free on the disk: used %d MiB instead of %d", free, n, mb)
}
