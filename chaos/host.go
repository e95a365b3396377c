package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The two loopback "machines" of the deployment.
var hostAddrs = []struct{ name, addr string }{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}}

// host is one `umstored run` process standing in for a machine. Its log
// (stdout and stderr of every incarnation, with a marker line before each)
// is one file beside its data directory. Its address, admin address and
// deployment file change when it is replaced (moveTo); read them through
// address, adminAddr and deployFile.
type host struct {
	name    string
	bin     string
	dataDir string
	logPath string
	disk    *disk // nil when slow disks are off
	log     *slog.Logger
	// runArgs are extra flags for every `umstored run` of the host (the
	// schedule's snapshot settings).
	runArgs []string
	// onExit, if set, is told about a daemon that exited by itself.
	onExit func(incarnation int, err error)
	// onStart, if set, is told about every incarnation started: where it
	// listens and the deployment file it was given.
	onStart func(incarnation int, addr, deploy string)
	// onEnd, if set, is told when an incarnation's process is gone
	// (killed, stopped or exited by itself), before kill9, stop and the
	// next start can return: the lock rule needs it (checkLocks).
	onEnd func(incarnation int, at time.Time)

	mu          sync.Mutex
	addr        string // where its stores listen (the deployment file's address of the host)
	admin       string // its admin server
	deploy      string // the deployment file its daemon is started with
	cmd         *exec.Cmd
	done        chan struct{}
	paused      bool
	incarnation int
	wipes       int
}

// start runs a new incarnation of the host's daemon on its data directory.
func (h *host) start(why string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		return fmt.Errorf("host %s is already running", h.name)
	}
	h.incarnation++
	lf, err := os.OpenFile(h.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open host %s log: %w", h.name, err)
	}
	fmt.Fprintf(lf, "%s incarnation=%d %s\n", incarnationMarker, h.incarnation, why)
	// --pprof: when the deployment does not come back, the harness keeps
	// every goroutine's stack (dumpStacks). --debug-clock: clock-jump steps
	// the daemon's wall clock through the admin address (kind_clock.go);
	// a daemon no step reaches runs on the system's clock as without it.
	args := append([]string{"run", "--deployment", h.deploy, "--host", h.name,
		"--data-dir", h.dataDir, "--admin-addr", h.admin, "--pprof", "--debug-clock"}, h.runArgs...)
	cmd := exec.Command(filepath.Join(h.bin, "umstored"), args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start host %s: %w", h.name, err)
	}
	if h.onStart != nil {
		h.onStart(h.incarnation, h.addr, h.deploy)
	}
	h.cmd, h.done, h.paused = cmd, make(chan struct{}), false
	done, inc := h.done, h.incarnation
	go func() {
		err := cmd.Wait()
		lf.Close()
		if h.onEnd != nil {
			h.onEnd(inc, time.Now())
		}
		// kill9 and stop forget the process before they signal it: one
		// still current exited by itself.
		h.mu.Lock()
		byItself := h.cmd == cmd
		if byItself {
			h.cmd = nil
		}
		h.mu.Unlock()
		if byItself {
			h.log.Error("host daemon exited by itself", "host", h.name, "incarnation", inc, "err", err)
			if h.onExit != nil {
				h.onExit(inc, err)
			}
		}
		close(done)
	}()
	h.log.Info("host started", "host", h.name, "address", h.addr, "incarnation", h.incarnation, "why", why, "pid", cmd.Process.Pid)
	return nil
}

// address is where the host's stores listen now.
func (h *host) address() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addr
}

// adminAddr is the host daemon's admin server (its /v1/status).
func (h *host) adminAddr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.admin
}

// deployFile is the deployment file the host's daemon is started with.
func (h *host) deployFile() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deploy
}

// moveTo makes the (stopped) host a server at addr, started from now on
// with the deployment file deploy (which places it there); the admin
// server keeps its port. It returns the address it had.
func (h *host) moveTo(addr, deploy string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		return "", fmt.Errorf("host %s must be stopped before it moves", h.name)
	}
	_, port, err := net.SplitHostPort(h.admin)
	if err != nil {
		return "", fmt.Errorf("host %s admin address %q: %w", h.name, h.admin, err)
	}
	from := h.addr
	h.addr, h.admin, h.deploy = addr, net.JoinHostPort(addr, port), deploy
	return from, nil
}

// pid is the daemon's process id, 0 when it is not running.
func (h *host) pid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// running reports whether the daemon process is up (it may be paused).
func (h *host) running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return false
	}
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// kill9 is a host crash: SIGKILL, then wait for the process to be gone.
func (h *host) kill9() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd, h.paused = nil, false
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop stops the daemon gracefully (SIGTERM), killing it if it takes
// longer than a bound.
func (h *host) stop() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd, h.paused = nil, false
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused daemon must wake to stop
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// pause freezes every store of the host at once (SIGSTOP).
func (h *host) pause() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return fmt.Errorf("host %s is not running", h.name)
	}
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause host %s: %w", h.name, err)
	}
	h.paused = true
	return nil
}

// resume undoes pause (SIGCONT).
func (h *host) resume() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil || !h.paused {
		return nil
	}
	h.paused = false
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume host %s: %w", h.name, err)
	}
	return nil
}

// wipe moves the (stopped) host's data directory aside, as if its disk
// had been replaced; the old contents stay beside it as evidence, those of
// the latest wipe only: a host's disk (1 GiB) holds its data directory and
// one more (raft-wal preallocates 64 MiB segments, about 200 MiB a host),
// and a schedule may wipe a host four times.
func (h *host) wipe() error {
	if h.running() {
		return fmt.Errorf("host %s must be stopped before its data is wiped", h.name)
	}
	h.mu.Lock()
	h.wipes++
	aside := fmt.Sprintf("%s.wiped-%d", h.dataDir, h.wipes)
	previous := fmt.Sprintf("%s.wiped-%d", h.dataDir, h.wipes-1)
	h.mu.Unlock()
	if err := os.RemoveAll(previous); err != nil {
		return fmt.Errorf("wipe host %s: remove the evidence of its previous wipe: %w", h.name, err)
	}
	if err := os.Rename(h.dataDir, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("wipe host %s: %w", h.name, err)
	}
	return nil
}
