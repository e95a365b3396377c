package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// umBins are the umstore commands, built from the parent module, and the
// flags the bench gives them.
type umBins struct {
	umstored, umpub string
	// detected are flags the bench adds where umstored has them: --pprof
	// (--cpuprofile reads /debug/pprof/profile, served only with it).
	detected []string
	// keepAll is --retention-max-bytes 0 where umstored has retention
	// limits, so the stores keep everything published, as the JetStream
	// streams (no limits) do, and the catch-up and memory tests retain what
	// they publish. The soak replaces it with its own small limit.
	keepAll []string
	// user are --store-args and --log-store, last so they win.
	user []string
	// umpubPayload: umpub has --payload (random payloads with --count and
	// --sources); without it, random payloads go through umpub --stdin.
	umpubPayload bool
	// runHelp is `umstored run --help`: the flags a run host takes.
	runHelp string
}

// storeArgs are the flags for every `umstored dev` and `umstored run` of
// the throughput, catch-up and memory tests.
func (b umBins) storeArgs() []string {
	return append(append(append([]string{}, b.detected...), b.keepAll...), b.user...)
}

// retentionArgs are storeArgs with the retention limit given instead of
// "keep everything" (the soak), followed by extra.
func (b umBins) retentionArgs(maxBytes int64, extra []string) []string {
	args := append([]string{}, b.detected...)
	if len(b.keepAll) > 0 {
		args = append(args, "--retention-max-bytes", strconv.FormatInt(maxBytes, 10))
	}
	return append(append(args, b.user...), extra...)
}

// buildUmstore builds umstored, umpub and umrcv from the module at repo into
// dir, as a user would: go build -o DIR/ ./cmd/umstored ./cmd/umpub ./cmd/umrcv.
func buildUmstore(ctx context.Context, repo, dir string) (umBins, error) {
	gm, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil || !regexp.MustCompile(`(?m)^module umstore\s*$`).Match(gm) {
		return umBins{}, fmt.Errorf("%s is not the umstore module (run the bench from bench/, or pass --repo)", repo)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return umBins{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./cmd/umstored", "./cmd/umpub", "./cmd/umrcv")
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		return umBins{}, fmt.Errorf("go build in %s: %v\n%s", repo, err, out)
	}
	b := umBins{umstored: filepath.Join(dir, "umstored"), umpub: filepath.Join(dir, "umpub")}
	help, _ := exec.CommandContext(ctx, b.umstored, "dev", "--help").CombinedOutput()
	runHelp, _ := exec.CommandContext(ctx, b.umstored, "run", "--help").CombinedOutput()
	b.runHelp = string(runHelp)
	if bytes.Contains(help, []byte("--retention-max-bytes")) {
		b.keepAll = []string{"--retention-max-bytes", "0"}
	}
	if bytes.Contains(help, []byte("--pprof")) {
		b.detected = append(b.detected, "--pprof")
	}
	pubHelp, _ := exec.CommandContext(ctx, b.umpub, "--help").CombinedOutput()
	b.umpubPayload = bytes.Contains(pubHelp, []byte("--payload"))
	return b, nil
}

// hasStoreFlag reports whether both `umstored dev` and `umstored run` list flag.
func (b umBins) hasStoreFlag(ctx context.Context, flag string) bool {
	help, _ := exec.CommandContext(ctx, b.umstored, "dev", "--help").CombinedOutput()
	return bytes.Contains(help, []byte(flag)) && strings.Contains(b.runHelp, flag)
}

// umDev is a running `umstored dev`: two groups of three stores in one process.
type umDev struct {
	p          *proc
	dir, admin string
	deployment string
}

// startUmDev starts `umstored dev` in dir with the extra args (storeArgs
// or retentionArgs).
func startUmDev(ctx context.Context, b umBins, dir, logPath string, args []string) (*umDev, error) {
	base, err := freeBasePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	ap, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	admin := fmt.Sprintf("127.0.0.1:%d", ap)
	p, err := startProc("umstored dev", b.umstored, append([]string{"dev", "--data-dir", dir, "--base-port", strconv.Itoa(base), "--admin-addr", admin}, args...), logPath, "ready.")
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, 90*time.Second); err != nil {
		p.stop(15 * time.Second)
		return nil, err
	}
	return &umDev{p: p, dir: dir, admin: admin, deployment: filepath.Join(dir, "deployment.yaml")}, nil
}

// umpubResult is umpub --json's summary (the fields the bench uses).
type umpubResult struct {
	Source         string  `json:"source"`
	Sent           int     `json:"sent"`
	Stable         int     `json:"stable"`
	ElapsedS       float64 `json:"elapsed_s"`
	RegisterS      float64 `json:"register_s"` // with --sources K: the registrations, before the span of ElapsedS
	MsgsPerS       float64 `json:"msgs_per_s"`
	MBPerS         float64 `json:"mb_per_s"`
	LatencyUS      Latency `json:"latency_us"`
	Conflicts      uint64  `json:"conflicts"`
	Resends        uint64  `json:"resends"`
	ForcedReleases uint64  `json:"forced_releases"`
	// CPUSeconds is umpub's own CPU time (user + system), from its exit
	// status, not from its summary: the client's share of a run, which
	// JetStream's figure includes (its publishers run in the bench).
	CPUSeconds float64 `json:"-"`
}

// load is one publishing run's shape, the same for both systems.
type load struct {
	size, count, sources, flight int     // count: total over all sources
	connections                  string  // umpub --connections; "": its default
	rate                         float64 // total msgs/s; 0 = flat out
	payload                      string  // payloadRandom or payloadText
	// duration, when not 0, ends the run after that long instead of after
	// count messages (umstore only, through --stdin: the soak's chunks).
	duration time.Duration
	// stopFeed, when closed, ends a --stdin run early and cleanly (umpub
	// sends what it read and reports): the soak, when the disk runs low.
	stopFeed <-chan struct{}
	seed     uint64 // makes each run's random payloads its own
}

func (l load) perSource() int { return max(1, l.count/l.sources) }

// viaStdin tells whether umpub gets its payloads from the bench on
// standard input: random payloads from an umpub without --payload, and
// runs bounded by time.
func (l load) viaStdin(b umBins) bool {
	return l.duration > 0 || (l.payload == payloadRandom && !b.umpubPayload)
}

// runUmpub publishes with umpub on source name (NAME-1..K with K sources)
// and returns its JSON summary. Random payloads are umpub's own with
// --payload random, or lines the bench writes to umpub --stdin (one source
// only; see payload.go).
func runUmpub(ctx context.Context, b umBins, deployment, name string, l load, logPath string) (umpubResult, error) {
	var r umpubResult
	stdin := l.viaStdin(b)
	if stdin && l.sources > 1 {
		return r, fmt.Errorf("umpub: random payloads with --sources %d need umpub --payload random, which this umpub lacks (use --payload text, or --sources 1)", l.sources)
	}
	// A guard, not a measurement: 2 minutes plus 100 µs per message and
	// 1 µs per 8 bytes (about 6 minutes for 1 GiB of 1 KiB messages).
	timeout := 120*time.Second + time.Duration(l.count)*time.Duration(100+l.size/8)*time.Microsecond
	if l.rate > 0 {
		timeout += time.Duration(float64(l.count) / l.rate * float64(time.Second))
	}
	if l.duration > 0 {
		timeout = l.duration + 5*time.Minute
	}
	args := []string{"--deployment", deployment, "--source", name,
		"--size", strconv.Itoa(l.size), "--flight-size", strconv.Itoa(l.flight), "--json", "--timeout", timeout.String()}
	switch {
	case stdin:
		args = append(args, "--stdin")
	default:
		args = append(args, "--count", strconv.Itoa(l.perSource()))
		if l.payload == payloadRandom {
			args = append(args, "--payload", payloadRandom)
		}
	}
	if l.sources > 1 {
		args = append(args, "--sources", strconv.Itoa(l.sources))
	}
	if l.connections != "" {
		args = append(args, "--connections", l.connections)
	}
	if l.rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(l.rate, 'f', 0, 64))
	}
	cmd := exec.CommandContext(ctx, b.umpub, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return r, err
	}
	defer lf.Close()
	what := ""
	if stdin {
		what = fmt.Sprintf(" (stdin: %d %s lines of %d B", l.count, l.payload, l.size)
		if l.duration > 0 {
			what = fmt.Sprintf(" (stdin: %s lines of %d B for %v", l.payload, l.size, l.duration)
		}
		what += ")"
	}
	fmt.Fprintf(lf, "=== %s umpub %s%s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "), what)
	cmd.Stderr = lf
	var w io.WriteCloser
	if stdin {
		if w, err = cmd.StdinPipe(); err != nil {
			return r, err
		}
	}
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("start umpub: %w", err)
	}
	fed := make(chan error, 1)
	if stdin {
		go func() {
			count, deadline := l.count, time.Time{}
			if l.duration > 0 {
				count, deadline = -1, time.Now().Add(l.duration)
			}
			var f *randomFiller
			if l.payload == payloadRandom {
				f = newRandomFiller(l.seed, uint64(l.size))
			}
			_, err := feedLines(ctx, w, f, l.size, count, deadline, l.stopFeed)
			w.Close()
			fed <- err
		}()
	} else {
		fed <- nil
	}
	runErr := cmd.Wait()
	if ferr := <-fed; ferr != nil && runErr == nil {
		runErr = ferr
	}
	if ps := cmd.ProcessState; ps != nil {
		r.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	fmt.Fprint(lf, stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return r, fmt.Errorf("umpub %s: %v; no JSON summary (%v; log %s)", name, runErr, err, logPath)
	}
	if runErr != nil {
		return r, fmt.Errorf("umpub %s: %v: %d of %d stable (log %s)", name, runErr, r.Stable, r.Sent, logPath)
	}
	return r, nil
}

// storeStatus is the part of /v1/status's per-store object the bench reads.
type storeStatus struct {
	Name          string `json:"name"`
	Group         int    `json:"group"`
	State         string `json:"state"`
	Leader        string `json:"leader"`
	AppliedIndex  uint64 `json:"applied_index"`
	LastIndex     uint64 `json:"last_index"`
	HasState      bool   `json:"has_state"`
	CatchingUp    bool   `json:"catching_up"`
	CatchUpTarget uint64 `json:"catch_up_target"`
	WaitingToJoin bool   `json:"waiting_to_join"`
	Sources       []struct {
		Name  string `json:"name"`
		Count uint64 `json:"count"`
		Bytes uint64 `json:"bytes"`
	} `json:"sources"`
	Error string `json:"error"`
}

func (s storeStatus) bytes() (n uint64) {
	for _, src := range s.Sources {
		n += src.Bytes
	}
	return n
}

type hostStatus struct {
	Stores []storeStatus `json:"stores"`
	Ready  bool          `json:"ready"`
}

var httpc = &http.Client{Timeout: 5 * time.Second}

func getStatus(ctx context.Context, admin string) (hostStatus, error) {
	var st hostStatus
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/v1/status", nil)
	resp, err := httpc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("GET /v1/status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// metric reads one unlabelled sample from the Prometheus text on /metrics.
func metric(ctx context.Context, admin, name string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/metrics", nil)
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("metric %s not found on http://%s/metrics", name, admin)
}

// fetchProfile saves a CPU profile of the daemon at admin.
func fetchProfile(ctx context.Context, admin string, seconds int, path string) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, seconds), nil)
	c := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET /debug/pprof/profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// waitReadyz polls /readyz until it answers 200.
func waitReadyz(ctx context.Context, admin string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/readyz", nil)
		resp, err := httpc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("http://%s/readyz not ready after %v", admin, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
