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

// umBins are the umstore commands, built from the parent module.
type umBins struct {
	umstored, umpub string
	// storeArgs are added to every `umstored dev` and `umstored run`:
	// --retention-max-bytes 0 where umstored has retention limits, so the
	// stores keep everything published, as the JetStream streams (no limits)
	// do, and the catch-up and memory tests retain what they publish.
	storeArgs []string
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
	if bytes.Contains(help, []byte("--retention-max-bytes")) {
		b.storeArgs = append(b.storeArgs, "--retention-max-bytes", "0")
	}
	if bytes.Contains(help, []byte("--pprof")) {
		// --cpuprofile reads /debug/pprof/profile, served only with --pprof.
		b.storeArgs = append(b.storeArgs, "--pprof")
	}
	return b, nil
}

// umDev is a running `umstored dev`: two groups of three stores in one process.
type umDev struct {
	p          *proc
	dir, admin string
	deployment string
}

func startUmDev(ctx context.Context, b umBins, dir, logPath string) (*umDev, error) {
	base, err := freeBasePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	ap, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	admin := fmt.Sprintf("127.0.0.1:%d", ap)
	p, err := startProc("umstored dev", b.umstored, append([]string{"dev", "--data-dir", dir, "--base-port", strconv.Itoa(base), "--admin-addr", admin}, b.storeArgs...), logPath, "ready.")
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
	rate                         float64 // total msgs/s; 0 = flat out
}

func (l load) perSource() int { return max(1, l.count/l.sources) }

// runUmpub publishes with umpub on source name (NAME-1..K with K sources)
// and returns its JSON summary.
func runUmpub(ctx context.Context, b umBins, deployment, name string, l load, logPath string) (umpubResult, error) {
	var r umpubResult
	// A guard, not a measurement: 2 minutes plus 100 µs per message and
	// 1 µs per 8 bytes (about 6 minutes for 1 GiB of 1 KiB messages).
	timeout := 120*time.Second + time.Duration(l.count)*time.Duration(100+l.size/8)*time.Microsecond
	if l.rate > 0 {
		timeout += time.Duration(float64(l.count) / l.rate * float64(time.Second))
	}
	args := []string{"--deployment", deployment, "--source", name, "--count", strconv.Itoa(l.perSource()),
		"--size", strconv.Itoa(l.size), "--flight-size", strconv.Itoa(l.flight), "--json", "--timeout", timeout.String()}
	if l.sources > 1 {
		args = append(args, "--sources", strconv.Itoa(l.sources))
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
	fmt.Fprintf(lf, "=== %s umpub %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd.Stderr = lf
	runErr := cmd.Run()
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

// diskWriteMBps writes mb MiB into a file in dir in 1 MiB writes, fsyncs
// once at the end, and returns MB/s (10^6 bytes) including the fsync, as
// dd bs=1M count=mb conv=fdatasync would.
func diskWriteMBps(dir string, mb int) (float64, error) {
	f, err := os.CreateTemp(dir, "diskbw-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 3) // not zeros, in case the device dedups or compresses
	}
	start := time.Now()
	for i := 0; i < mb; i++ {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return float64(mb<<20) / time.Since(start).Seconds() / 1e6, nil
}
