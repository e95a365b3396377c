package dirlock

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"umstore/internal/testmain"
)

// The process tests re-run this test binary as a child that holds a lock
// (see runChild); the environment tells it what to do.
const (
	envChild     = "DIRLOCK_TEST_CHILD" // lock mode; set only in children
	envDir       = "DIRLOCK_TEST_DIR"
	envID        = "DIRLOCK_TEST_ID"
	envStandby   = "DIRLOCK_TEST_STANDBY"
	envKeepAlive = "DIRLOCK_TEST_KEEPALIVE"
	envLease     = "DIRLOCK_TEST_LEASE"
	envAcquire   = "DIRLOCK_TEST_ACQUIRE"
)

// Short durations for the lease tests.
const (
	testKeepAlive = 200 * time.Millisecond
	testLease     = time.Second
	testAcquire   = 400 * time.Millisecond
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(runChild(Mode(mode)))
	}
	os.Exit(testmain.Run(m, 8)) // the tests wait on leases and child processes, not the CPU
}

// runChild acquires the lock, prints "ACQUIRED <id>", then every 50 ms
// calls Check and, when it passes, appends "<id> <n>" to dir/writes.log
// (fsynced) and prints "WROTE <n>". It exits when the lock is lost.
func runChild(mode Mode) int {
	say := func(format string, args ...any) {
		// One write per line, so the parent reads whole lines.
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	dur := func(env string) time.Duration {
		d, _ := time.ParseDuration(os.Getenv(env))
		return d
	}
	dir := os.Getenv(envDir)
	o := Options{
		Mode:            mode,
		Name:            "T1",
		Standby:         os.Getenv(envStandby) == "1",
		HolderID:        os.Getenv(envID),
		KeepAlive:       dur(envKeepAlive),
		LeaseDuration:   dur(envLease),
		AcquireInterval: dur(envAcquire),
		OnWait:          func(holder string) { say("WAITING %s", holder) },
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	l, err := Acquire(context.Background(), dir, o)
	if err != nil {
		say("ERROR %v", err)
		return 3
	}
	say("ACQUIRED %s", l.HolderID())
	f, err := os.OpenFile(filepath.Join(dir, "writes.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		say("ERROR %v", err)
		return 5
	}
	tick := time.NewTicker(50 * time.Millisecond)
	for n := 1; ; {
		select {
		case <-l.Lost():
			say("LOST %v", l.Check())
			return 4
		case <-tick.C:
		}
		if err := l.Check(); err != nil {
			say("CHECKFAIL %v", err)
			continue
		}
		if _, err := fmt.Fprintf(f, "%s %d\n", l.HolderID(), n); err != nil {
			say("ERROR %v", err)
			return 5
		}
		if err := f.Sync(); err != nil {
			say("ERROR %v", err)
			return 5
		}
		say("WROTE %d", n)
		n++
	}
}

// child is a lock-holding child process seen from the test.
type child struct {
	t    *testing.T
	id   string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped

	mu     sync.Mutex
	lines  []line
	stderr bytes.Buffer
}

type line struct {
	text string
	at   time.Time
}

type childOpts struct {
	mode    Mode
	standby bool
	lease   time.Duration // default testLease
}

func startChild(t *testing.T, dir, id string, co childOpts) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"="+string(co.mode),
		envDir+"="+dir,
		envID+"="+id,
		envKeepAlive+"="+testKeepAlive.String(),
		envLease+"="+cmp.Or(co.lease, testLease).String(),
		envAcquire+"="+testAcquire.String(),
	)
	if co.standby {
		cmd.Env = append(cmd.Env, envStandby+"=1")
	}
	c := &child{t: t, id: id, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = lockedWriter{&c.mu, &c.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, line{sc.Text(), time.Now()})
			c.mu.Unlock()
		}
		cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // also ends a stopped process
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Errorf("child %s did not exit", id)
		}
		if t.Failed() {
			c.mu.Lock()
			t.Logf("child %s stdout:\n%s\nstderr:\n%s", id, c.stdoutLocked(), c.stderr.String())
			c.mu.Unlock()
		}
	})
	return c
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (c *child) stdoutLocked() string {
	var b strings.Builder
	for _, l := range c.lines {
		fmt.Fprintf(&b, "  %s %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	return b.String()
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// find returns the first line at index ≥ from that starts with prefix.
func (c *child) find(prefix string, from int) (int, line, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := from; i < len(c.lines); i++ {
		if strings.HasPrefix(c.lines[i].text, prefix) {
			return i, c.lines[i], true
		}
	}
	return 0, line{}, false
}

func (c *child) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// waitFor waits up to timeout for a line starting with prefix at index ≥ from.
func (c *child) waitFor(prefix string, from int, timeout time.Duration) (int, line, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if i, l, ok := c.find(prefix, from); ok {
			return i, l, true
		}
		if time.Now().After(deadline) {
			return 0, line{}, false
		}
		select {
		case <-c.done:
			// The process is gone; its output is complete.
			i, l, ok := c.find(prefix, from)
			return i, l, ok
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *child) mustSee(prefix string, timeout time.Duration) line {
	c.t.Helper()
	_, l, ok := c.waitFor(prefix, 0, timeout)
	if !ok {
		c.t.Fatalf("child %s: no %q line within %v", c.id, prefix, timeout)
	}
	return l
}

func (c *child) acquired() bool {
	_, _, ok := c.find("ACQUIRED", 0)
	return ok
}

func (c *child) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to child %s: %v", sig, c.id, err)
	}
}

// kill9 kills the child with SIGKILL and waits until it has been reaped.
// A child that has already exited (a lease holder starved past its lease on
// a loaded machine steps down by itself) is fine too.
func (c *child) kill9() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("kill child %s: %v", c.id, err)
	}
	c.waitExit(5 * time.Second)
}

func (c *child) waitExit(timeout time.Duration) int {
	c.t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		c.t.Fatalf("child %s did not exit within %v", c.id, timeout)
		return 0
	}
}

// writesLog reads dir/writes.log as (holder id, n) pairs in file order.
func writesLog(t *testing.T, dir string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "writes.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("bad line %q in writes.log", l)
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	return out
}

// checkHandOver asserts that, once `next` has written to writes.log, no
// other holder writes a line after it.
func checkHandOver(t *testing.T, dir, next string) {
	t.Helper()
	seen := false
	for i, w := range writesLog(t, dir) {
		switch {
		case w[0] == next:
			seen = true
		case seen:
			t.Errorf("writes.log line %d: %s wrote %s after %s had taken over", i+1, w[0], w[1], next)
		}
	}
	if !seen {
		t.Errorf("writes.log: no line from %s", next)
	}
}

// waitLogged waits until id has written at least one line to writes.log.
func waitLogged(t *testing.T, dir, id string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, w := range writesLog(t, dir) {
			if w[0] == id {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s wrote nothing to writes.log within %v", id, timeout)
}

// quietLogger keeps in-process tests' logs out of the way unless -v.
func quietLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
