package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runMeasured runs a tool as runTool does and also returns its peak
// resident memory.
func runMeasured(t *testing.T, bin string, args ...string) (stdout, stderr string, code int, maxRSS int64, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, args[0]), args[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	// The peak RSS is read from /proc while the process runs: the rusage
	// that wait returns counts, on Linux, the memory of the test process
	// that forked it (a vfork shares its address space until exec), which
	// under the race detector alone is hundreds of MiB.
	done := make(chan struct{})
	var peak atomic.Int64
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if kb := vmHWM(status); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), code, peak.Load() << 10, took
}

// vmHWM returns the VmHWM line of a /proc status file in KiB (0 if the
// process is gone). It is the process's own peak, reset by exec.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// umrcv over a range far wider than a small source reads the messages held
// and names the rest as missing, quickly and in little memory: it keeps
// ranges, not a slot per sequence number (before, --to 4000000000 ran out
// of memory). A --to past the sequence-number ceiling is bad usage, said so,
// never a panic.
func TestUmrcvWideRange(t *testing.T) {
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deployment := filepath.Join(data, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", deployment, "--source", "small", "--count", "3", "--size", "20"); code != 0 {
		t.Fatalf("umpub exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	out, errOut, code, rss, took := runMeasured(t, bin, "umrcv", "--deployment", deployment, "--source", "small", "--from", "1", "--to", "4000000000")
	t.Logf("umrcv --to 4000000000: exit %d in %v, peak RSS %d MiB", code, took, rss>>20)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 1 || len(lines) != 3 || !strings.HasPrefix(lines[0], "1 ") || !strings.HasPrefix(lines[2], "3 ") {
		t.Fatalf("umrcv --to 4000000000: exit %d, stdout %q; want exit 1 and the 3 messages", code, out)
	}
	if want := "umrcv: messages held by no reachable store group: 4-4000000000\n"; errOut != want {
		t.Fatalf("umrcv --to 4000000000: stderr %q, want %q", errOut, want)
	}
	if took > 30*time.Second || rss > 256<<20 {
		t.Fatalf("umrcv --to 4000000000 took %v and %d MiB for 3 messages", took, rss>>20)
	}

	for _, args := range [][]string{
		{"--from", "1", "--to", "18446744073709551615"},
		{"--to", "9007199254740992"},
		{"--from", "18446744073709551615"},
	} {
		all := append([]string{"umrcv", "--deployment", deployment, "--source", "small"}, args...)
		out, errOut, code := runTool(t, bin, all...)
		if code != 2 || out != "" || !strings.Contains(errOut, "is above 9007199254740991, the highest sequence number a source can have") || strings.Contains(errOut, "panic") {
			t.Fatalf("umrcv %v: exit %d, stdout %q, stderr %q; want exit 2 naming the ceiling", args, code, out, errOut)
		}
	}
	// At the ceiling itself the range is valid, and missing.
	_, errOut, code = runTool(t, bin, "umrcv", "--deployment", deployment, "--source", "small", "--from", "2", "--to", "9007199254740991")
	if code != 1 || !strings.Contains(errOut, "4-9007199254740991") {
		t.Fatalf("umrcv --to the ceiling: exit %d, stderr %q; want exit 1 naming 4-9007199254740991", code, errOut)
	}
}
