// Command bench measures umstore against NATS JetStream on this machine, in
// one run: umstore's real binaries (umstored dev: two groups of three
// stores, fsync before acknowledgement, intergroup "any") driven by umpub,
// and an embedded three-node JetStream cluster (R3 file stream), once with
// sync_always and once with its defaults, driven with the same message
// sizes, counts, concurrency and window. Runs alternate between the three
// systems; the table reports medians and ratios. Optionally: latency at half
// of umstore's maximum load, catch-up of a wiped store host, resident memory
// after retaining 1 GB, and a CPU profile of umstored.
//
//	cd bench && go run . [--runs 3] [--count N] [--sizes 64,1024] [--sources K] [--catchup] [--memory] [--json]
//
// It is its own module so nats-server stays out of umstore's go.mod.
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

type config struct {
	Runs       int    `json:"runs"`
	Count      int    `json:"count"`
	Sizes      []int  `json:"sizes"`
	Sources    int    `json:"sources"`
	Flight     int    `json:"flight"`
	Throughput bool   `json:"throughput"`
	HalfLoad   bool   `json:"half_load"`
	Catchup    bool   `json:"catchup"`
	CatchupMB  int    `json:"catchup_mib,omitempty"`
	Memory     bool   `json:"memory"`
	MemoryMB   int    `json:"memory_mib,omitempty"`
	CPUProfile string `json:"cpuprofile,omitempty"`
	StoreArgs  string `json:"store_args,omitempty"`
	Repo       string `json:"-"`
	Dir        string `json:"-"`
	Keep       bool   `json:"-"`
	JSON       bool   `json:"-"`
	JSONOut    string `json:"-"`
}

// System names in the results.
const (
	sysUM        = "umstore"
	sysJSSync    = "JetStream sync_always"
	sysJSDefault = "JetStream default"
)

var systems = []string{sysUM, sysJSSync, sysJSDefault}

type runResult struct {
	System    string  `json:"system"`
	Size      int     `json:"size"`
	Run       int     `json:"run"`
	Rate      float64 `json:"rate,omitempty"` // offered msgs/s (half-load runs)
	Messages  int     `json:"messages"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	MBPerS    float64 `json:"mb_per_s"`
	ElapsedS  float64 `json:"elapsed_s"`
	LatencyUS Latency `json:"latency_us"`
	// DiskWriteBytes is what the system's servers wrote to storage during
	// the run, all replicas together (write_bytes in /proc/PID/io, see
	// procio.go): umstored's for umstore, the bench process's for
	// JetStream. 0 if /proc could not be read.
	DiskWriteBytes int64 `json:"disk_write_bytes"`
	// CPUSeconds is the CPU time of umstored for umstore; for JetStream,
	// of the whole bench process: the servers and the publishers. 0 if
	// /proc could not be read.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	// ClientCPUSeconds is umpub's CPU time (umstore only), to add to
	// CPUSeconds for a figure comparable with JetStream's.
	ClientCPUSeconds float64 `json:"client_cpu_s,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// writePerPayload is the bytes written to storage per byte of payload
// acknowledged, or 0 if unknown.
func (r runResult) writePerPayload() float64 {
	return ratio(float64(r.DiskWriteBytes), float64(r.Messages)*float64(r.Size))
}

type row struct {
	Size     int     `json:"size"`
	System   string  `json:"system"`
	Rate     float64 `json:"rate,omitempty"`
	MsgsPerS float64 `json:"median_msgs_per_s"`
	MBPerS   float64 `json:"median_mb_per_s"`
	P50US    float64 `json:"median_p50_us"`
	P99US    float64 `json:"median_p99_us"`
	P999US   float64 `json:"median_p999_us"`
	// WritePerPayload is the median of the runs' bytes written to storage
	// per byte of payload (runs without a reading left out; 0: none had one).
	WritePerPayload float64 `json:"median_disk_bytes_per_payload_byte"`
	// CPUSeconds and ClientCPUSeconds are medians of the runs' (see runResult).
	CPUSeconds       float64   `json:"median_cpu_s,omitempty"`
	ClientCPUSeconds float64   `json:"median_client_cpu_s,omitempty"`
	Runs             []float64 `json:"runs_msgs_per_s"`
	P99Runs          []float64 `json:"runs_p99_us"`
	Failed           int       `json:"failed_runs,omitempty"`
	// Ratios of umstore's median to this system's (throughput), or this
	// system's p99 to umstore's (half load: > 1 means umstore is better).
	Ratio float64 `json:"umstore_ratio,omitempty"`
}

type machine struct {
	NProc     int    `json:"nproc"`
	CPU       string `json:"cpu"`
	Memory    string `json:"memory"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	Disk      string `json:"disk"`
	GOMAXPROC int    `json:"gomaxprocs"`
}

type results struct {
	Started    string         `json:"started"`
	Revision   string         `json:"umstore_revision"`
	StoreArgs  string         `json:"umstored_extra_args,omitempty"`
	Machine    machine        `json:"machine"`
	Config     config         `json:"config"`
	Runs       []runResult    `json:"runs"`
	Throughput []row          `json:"throughput"`
	HalfRuns   []runResult    `json:"half_load_runs,omitempty"`
	HalfLoad   []row          `json:"half_load,omitempty"`
	Catchup    *catchupResult `json:"catchup,omitempty"`
	Memory     *memoryResult  `json:"memory,omitempty"`
	Profile    string         `json:"cpu_profile_top,omitempty"`
	LoadAvg    []string       `json:"loadavg"` // /proc/loadavg at the start and the end
	Notes      []string       `json:"notes,omitempty"`
	ElapsedS   float64        `json:"elapsed_s"`
}

func main() {
	os.Exit(run())
}

func run() int {
	var c config
	var sizes string
	flag.IntVar(&c.Runs, "runs", 3, "repetitions of each (size, system); the table reports medians")
	flag.IntVar(&c.Count, "count", 200000, "messages per run, in total over all publishers")
	flag.StringVar(&sizes, "sizes", "64,1024", "message sizes in bytes, comma-separated (at least 8)")
	flag.IntVar(&c.Sources, "sources", 1, "concurrent publishers: umpub --sources K (K sources) / K JetStream connections, one subject each")
	flag.IntVar(&c.Flight, "flight", 4096, "window of unacknowledged messages per publisher: umpub --flight-size and JetStream's async max pending")
	flag.BoolVar(&c.Throughput, "throughput", true, "run the throughput comparison (--throughput=false: only --catchup and/or --memory)")
	flag.BoolVar(&c.HalfLoad, "half-load", true, "also measure latency at half of umstore's median maximum rate, with JetStream at the same rate")
	flag.BoolVar(&c.Catchup, "catchup", false, "also measure catch-up of a wiped store host (umstored run on 127.0.0.2 and 127.0.0.3)")
	flag.IntVar(&c.CatchupMB, "catchup-mb", 1024, "MiB of 1 KiB messages to publish before wiping a host")
	flag.BoolVar(&c.Memory, "memory", false, "also measure umstored's resident memory while retaining --memory-mb")
	flag.IntVar(&c.MemoryMB, "memory-mb", 1024, "MiB of 1 KiB messages to retain for --memory")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "also save a 10 s CPU profile of umstored during an extra run at the first size to `FILE` (and FILE.top.txt)")
	flag.StringVar(&c.StoreArgs, "store-args", "", "extra flags for every `umstored dev` and `umstored run`, space-separated (e.g. \"--snapshot-threshold 256 --trailing-logs 64\" to measure catch-up by repository copy)")
	flag.StringVar(&c.Repo, "repo", "..", "the umstore module to build the binaries from")
	flag.StringVar(&c.Dir, "dir", "", "work directory for data and logs (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&c.Keep, "keep", false, "keep the work directory (data and logs) at the end")
	flag.BoolVar(&c.JSON, "json", false, "print the results as one JSON object instead of Markdown")
	flag.StringVar(&c.JSONOut, "json-out", "", "also write the results as JSON to `FILE`")
	flag.Parse()
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 8 || n > 1<<20 {
			fmt.Fprintf(os.Stderr, "bench: --sizes: %q is not a size of 8 bytes to 1 MiB\n", f)
			return 2
		}
		c.Sizes = append(c.Sizes, n)
	}
	if c.Runs < 1 || c.Count < 1 || c.Sources < 1 || c.Flight < 1 || c.Count < c.Sources {
		fmt.Fprintln(os.Stderr, "bench: --runs, --count, --sources and --flight must be positive, and --count at least --sources")
		return 2
	}
	if !c.Catchup {
		c.CatchupMB = 0
	}
	if !c.Memory {
		c.MemoryMB = 0
	}
	if !c.Throughput {
		c.HalfLoad, c.CPUProfile = false, ""
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
	bins.storeArgs = append(bins.storeArgs, strings.Fields(c.StoreArgs)...)
	defer func() { res.ElapsedS = time.Since(started).Seconds() }()
	res.StoreArgs = strings.Join(bins.storeArgs, " ")

	if c.Throughput {
		if err := throughputPhase(ctx, c, bins, work, res, logf); err != nil {
			return res, err
		}
	}

	if c.Catchup {
		mb, note := fitDisk(work, c.CatchupMB, 16)
		if note != "" {
			res.Notes = append(res.Notes, "catch-up: "+note)
		}
		cr, err := runCatchup(ctx, bins, filepath.Join(work, "catchup"), mb, 1024, c.Sources, c.Flight, 1024, logf)
		if err != nil {
			res.Notes = append(res.Notes, "catch-up failed: "+err.Error())
			if ctx.Err() != nil {
				return res, err
			}
		}
		res.Catchup = cr
		if !c.Keep {
			_ = os.RemoveAll(filepath.Join(work, "catchup"))
		}
	}
	if c.Memory {
		mb, note := fitDisk(work, c.MemoryMB, 16)
		if note != "" {
			res.Notes = append(res.Notes, "memory: "+note)
		}
		mr, err := runMemory(ctx, bins, filepath.Join(work, "memory"), mb, 1024, c.Sources, c.Flight, logf)
		if err != nil {
			res.Notes = append(res.Notes, "memory test failed: "+err.Error())
			if ctx.Err() != nil {
				return res, err
			}
		}
		res.Memory = mr
	}
	res.ElapsedS = time.Since(started).Seconds()
	return res, nil
}

// throughputPhase runs the alternating throughput runs, the half-load runs
// and the CPU profile against one umstored dev and two JetStream clusters.
func throughputPhase(ctx context.Context, c config, bins umBins, work string, res *results, logf func(string, ...any)) error {
	logf("starting umstored dev and two embedded JetStream clusters (work dir %s)", work)
	dev, err := startUmDev(ctx, bins, filepath.Join(work, "umstore-dev"), filepath.Join(work, "umstored-dev.log"))
	if err != nil {
		return err
	}
	jsSync, err := startJSCluster(ctx, "jssync", filepath.Join(work, "js-sync"), true)
	if err != nil {
		return err
	}
	defer jsSync.shutdown()
	jsDef, err := startJSCluster(ctx, "jsdefault", filepath.Join(work, "js-default"), false)
	if err != nil {
		return err
	}
	defer jsDef.shutdown()
	umpubLog := filepath.Join(work, "umpub.log")
	nrun := 0
	one := func(system string, l load, runNo int) runResult {
		nrun++
		r := runResult{System: system, Size: l.size, Run: runNo, Rate: l.rate}
		switch system {
		case sysUM:
			before := readProcIO(dev.p.pid())
			u, err := runUmpub(ctx, bins, dev.deployment, fmt.Sprintf("b%d", nrun), l, umpubLog)
			r.DiskWriteBytes, r.CPUSeconds = settleProcIO(ctx, dev.p.pid()).since(before)
			r.ClientCPUSeconds = u.CPUSeconds
			r.Messages, r.MsgsPerS, r.MBPerS, r.ElapsedS, r.LatencyUS = u.Stable, u.MsgsPerS, u.MBPerS, u.ElapsedS, u.LatencyUS
			if err != nil {
				r.Error = err.Error()
			}
		default:
			cl := jsSync
			if system == sysJSDefault {
				cl = jsDef
			}
			j, err := cl.runJS(ctx, l)
			r.Messages, r.MsgsPerS, r.MBPerS, r.ElapsedS, r.LatencyUS = j.Acked, j.MsgsPerS, j.MBPerS, j.ElapsedS, j.LatencyUS
			r.DiskWriteBytes, r.CPUSeconds = j.DiskWriteBytes, j.CPUSeconds
			if err != nil {
				r.Error = err.Error()
			}
		}
		what := "max"
		if l.rate > 0 {
			what = fmt.Sprintf("rate %.0f", l.rate)
		}
		logf("run %d %-22s %5d B %-10s %8.0f msgs/s %7.2f MB/s  p50 %6.1f ms  p99 %7.1f ms  disk %5.2f× payload  CPU %5.2f s %s",
			runNo, system, l.size, what, r.MsgsPerS, r.MBPerS, float64(r.LatencyUS.P50)/1e3, float64(r.LatencyUS.P99)/1e3, r.writePerPayload(), r.CPUSeconds+r.ClientCPUSeconds, r.Error)
		return r
	}

	// Throughput: for each repetition and size, the three systems one after
	// the other, the order rotated every repetition.
	for i := 0; i < c.Runs; i++ {
		for _, size := range c.Sizes {
			for k := range systems {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				sys := systems[(k+i)%len(systems)]
				res.Runs = append(res.Runs, one(sys, load{size: size, count: c.Count, sources: c.Sources, flight: c.Flight}, i+1))
			}
		}
	}
	res.Throughput = summarize(res.Runs, c.Sizes, false)

	if c.HalfLoad {
		for i := 0; i < c.Runs; i++ {
			for _, size := range c.Sizes {
				rate := 0.5 * find(res.Throughput, size, sysUM).MsgsPerS
				if rate <= 0 {
					continue
				}
				// Half the messages of a throughput run: about as long.
				l := load{size: size, count: max(c.Sources, c.Count/2), sources: c.Sources, flight: c.Flight, rate: rate}
				for k := range systems {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					res.HalfRuns = append(res.HalfRuns, one(systems[(k+i)%len(systems)], l, i+1))
				}
			}
		}
		res.HalfLoad = summarize(res.HalfRuns, c.Sizes, true)
	}

	if c.CPUProfile != "" {
		top, err := profileRun(ctx, c, bins, dev, find(res.Throughput, c.Sizes[0], sysUM).MsgsPerS, umpubLog, logf)
		if err != nil {
			res.Notes = append(res.Notes, "CPU profile failed: "+err.Error())
		}
		res.Profile = top
	}
	dev.p.stop(30 * time.Second)
	jsSync.shutdown()
	jsDef.shutdown()
	// The throughput data is no longer needed; free the disk for what follows.
	_ = os.RemoveAll(filepath.Join(work, "umstore-dev"))
	_ = os.RemoveAll(filepath.Join(work, "js-sync"))
	_ = os.RemoveAll(filepath.Join(work, "js-default"))
	return nil
}

// profileRun runs umstore once more at the given size, long enough for a
// 10 s CPU profile of umstored taken from its admin address.
func profileRun(ctx context.Context, c config, b umBins, dev *umDev, rate float64, logPath string, logf func(string, ...any)) (string, error) {
	count := max(c.Count, int(rate*16))
	l := load{size: c.Sizes[0], count: count, sources: c.Sources, flight: c.Flight}
	logf("profile: %d messages of %d B while taking a 10 s CPU profile of umstored", count, l.size)
	done := make(chan error, 1)
	go func() {
		r, err := runUmpub(ctx, b, dev.deployment, "profile", l, logPath)
		logf("profile: the profiled run made %.0f msgs/s stable (p99 %.1f ms)", r.MsgsPerS, float64(r.LatencyUS.P99)/1e3)
		done <- err
	}()
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return "", err
	}
	perr := fetchProfile(ctx, dev.admin, 10, c.CPUProfile)
	if err := <-done; err != nil {
		return "", err
	}
	if perr != nil {
		return "", perr
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=30", c.CPUProfile).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	cum, _ := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=40", c.CPUProfile).CombinedOutput()
	_ = os.WriteFile(c.CPUProfile+".top.txt", append(append(out, "\n--- by cumulative ---\n"...), cum...), 0o644)
	logf("profile: saved %s and %s.top.txt", c.CPUProfile, c.CPUProfile)
	return string(out), nil
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
