package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"umstore/internal/testports"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds umstored, umpub and umrcv once per test run.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "umstore-e2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "umstore/cmd/umstored", "umstore/cmd/umpub", "umstore/cmd/umrcv")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// freeBase finds a base port whose ports at offsets are this test
// binary's alone (see internal/testports) and free on every address.
func freeBase(t *testing.T, addrs []string, offsets []int) int {
	t.Helper()
	return testports.Base(t, addrs, offsets)
}

// freeBasePort finds a base port whose 12 dev ports (raft and client) are free.
func freeBasePort(t *testing.T) int {
	t.Helper()
	return freeBase(t, []string{"127.0.0.1"}, []int{11, 12, 13, 21, 22, 23, 1011, 1012, 1013, 1021, 1022, 1023})
}

// startDev runs `umstored dev` and waits until it prints "ready".
func startDev(t *testing.T, bin, dataDir string, extra ...string) *exec.Cmd {
	t.Helper()
	return startDevAt(t, bin, dataDir, freeBasePort(t), extra...)
}

// startDevAt is startDev on the given base port: a dev deployment started
// again on its data directory keeps its ports.
func startDevAt(t *testing.T, bin, dataDir string, base int, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"dev", "--data-dir", dataDir, "--base-port", fmt.Sprint(base), "--admin-addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(filepath.Join(bin, "umstored"), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("umstored dev stderr:\n%s", stderr.String())
		}
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready." {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(90 * time.Second):
		t.Fatalf("umstored dev did not become ready; stderr:\n%s", stderr.String())
	}
	return cmd
}

func runTool(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, args[0]), args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

type pubSummary struct {
	Source    string  `json:"source"`
	Sent      int     `json:"sent"`
	Stable    int     `json:"stable"`
	FirstSeq  uint64  `json:"first_seq"`
	LastSeq   uint64  `json:"last_seq"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	LatencyUS struct {
		P50 int64 `json:"p50"`
		P99 int64 `json:"p99"`
	} `json:"latency_us"`
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// The newcomer's path: umstored dev, then umpub and umrcv against it.
func TestDevPublishReceive(t *testing.T) {
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deployment := filepath.Join(data, "deployment.yaml")

	out, errOut, code := runTool(t, bin, "umpub", "--deployment", deployment, "--source", "e2e", "--count", "5000", "--size", "100", "--json")
	if code != 0 {
		t.Fatalf("umpub exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
		t.Fatalf("umpub --json last line is not JSON: %v\n%s", err, out)
	}
	if sum.Source != "e2e" || sum.Sent != 5000 || sum.Stable != 5000 || sum.FirstSeq != 1 || sum.LastSeq != 5000 || sum.MsgsPerS <= 0 || sum.LatencyUS.P50 <= 0 {
		t.Fatalf("umpub summary: %+v", sum)
	}
	t.Logf("umpub: %.0f msgs/s, p50 %dus, p99 %dus", sum.MsgsPerS, sum.LatencyUS.P50, sum.LatencyUS.P99)

	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deployment, "--source", "e2e", "--from", "1", "--to", "5000")
	if code != 0 {
		t.Fatalf("umrcv exited %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 5000 {
		t.Fatalf("umrcv printed %d lines, want 5000", len(lines))
	}
	for i, l := range lines {
		want := fmt.Sprintf("%d e2e #%d ", i+1, i+1)
		if !strings.HasPrefix(l, want) || len(l) != len(fmt.Sprint(i+1))+1+100 {
			t.Fatalf("line %d = %q, want the 100-byte message %q...", i+1, l, want)
		}
	}

	// Each group holds everything, and a restarted umpub resumes after 5000.
	for _, g := range []string{"1", "2"} {
		out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deployment, "--source", "e2e", "--group", g, "--json")
		if n := strings.Count(out, "\n"); code != 0 || n != 5000 {
			t.Fatalf("umrcv --group %s: exit %d, %d lines; %s", g, code, n, errOut)
		}
	}
	out, _, code = runTool(t, bin, "umpub", "--deployment", deployment, "--source", "e2e", "--count", "1", "--json")
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || code != 0 || sum.FirstSeq != 5001 {
		t.Fatalf("second umpub: exit %d, summary %+v (%v), want first_seq 5001", code, sum, err)
	}

	// A range no group holds is named, with a non-zero exit.
	_, errOut, code = runTool(t, bin, "umrcv", "--deployment", deployment, "--source", "e2e", "--from", "4999", "--to", "5003")
	if code != 1 || !strings.Contains(errOut, "5002-5003") {
		t.Fatalf("umrcv past the end: exit %d, stderr %q; want 1 naming 5002-5003", code, errOut)
	}
	out, _, code = runTool(t, bin, "umstored", "status", "--deployment", deployment)
	if code != 0 || strings.Count(out, "leader") < 2 || !strings.Contains(out, "publishing: possible") {
		t.Fatalf("umstored status: exit %d\n%s", code, out)
	}
}

// Bad usage gets a clear error and exit status 2, never a crash.
func TestBadUsage(t *testing.T) {
	bin := binaries(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nname: x\nhosts: []\ngroups: []\nbogus: 1\n"), 0o600)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"umpub", "--source", "s"}, 2, "--deployment"},
		{[]string{"umpub", "--deployment", bad, "--source", "s"}, 2, "bogus"},
		{[]string{"umpub", "--store", "127.0.0.1:1", "--source", "s", "--count", "0"}, 2, "--count"},
		{[]string{"umpub", "--store", "127.0.0.1:1", "--source", "s", "--intergroup", "most"}, 2, "intergroup"},
		{[]string{"umrcv", "--store", "127.0.0.1:1", "--source", "s", "--from", "5", "--to", "2"}, 2, "below"},
		{[]string{"umstored", "nope"}, 2, "unknown command"},
		{[]string{"umstored", "run", "--deployment", bad, "--host", "A", "--data-dir", t.TempDir()}, 1, "bogus"},
		{[]string{"umstored", "plan", "--host", "A=127.0.0.2", "--stores-per-group", "2", "--out", filepath.Join(t.TempDir(), "d.yaml")}, 1, "stores"},
		// A flag the parser rejects says what was wrong and where to look.
		{[]string{"umpub", "--store", "127.0.0.1:1", "--source", "s", "--rate", "abc"}, 2,
			"umpub: invalid argument \"abc\" for \"--rate\" flag: strconv.ParseFloat: parsing \"abc\": invalid syntax\nRun 'umpub --help' for usage.\n"},
		{[]string{"umpub", "--sauce", "s"}, 2, "umpub: unknown flag: --sauce\nRun 'umpub --help' for usage.\n"},
		{[]string{"umrcv", "--store", "127.0.0.1:1", "--source", "s", "--to", "-1"}, 2,
			"umrcv: invalid argument \"-1\" for \"--to\" flag: strconv.ParseUint: parsing \"-1\": invalid syntax\nRun 'umrcv --help' for usage.\n"},
		{[]string{"umstored", "status", "--timeout", "soon"}, 2,
			"umstored status: invalid argument \"soon\" for \"--timeout\" flag: time: invalid duration \"soon\"\nRun 'umstored status --help' for usage.\n"},
		{[]string{"umstored", "stop", "--deployment", bad, "--hots", "A"}, 2, "umstored stop: unknown flag: --hots\nRun 'umstored stop --help' for usage.\n"},
		{[]string{"umstored", "run", "--deployment", bad, "stray"}, 2, "umstored run: unexpected argument \"stray\""},
		{[]string{"umstored", "plan", "--groups", "two"}, 2, "umstored plan: invalid argument \"two\" for \"--groups\" flag"},
		// A source name the stores would refuse, shown escaped.
		{[]string{"umpub", "--store", "127.0.0.1:1", "--source", "evil\x1b[2J"}, 2, `umpub: --source: invalid source name: "evil\x1b[2J" has the unprintable character U+001B`},
		// --help is not an error.
		{[]string{"umpub", "--help"}, 0, "Usage: umpub"},
		{[]string{"umstored", "stop", "--help"}, 0, "Usage: umstored stop"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, code := runTool(t, bin, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}
