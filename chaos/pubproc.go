package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// pubProc is the harness's handle on the publisher child of one source:
// it starts incarnations, records what each reports, and kills them.
type pubProc struct {
	exe     string
	base    childConfig // Source, Deployment, Rate, Count, Size, RegisterFor
	logPath string
	hist    *History
	log     *slog.Logger

	mu    sync.Mutex
	inc   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed once the process exited and its stdout is read
	state string        // what the current incarnation last reported
}

// start runs the next incarnation.
func (p *pubProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("publisher %s is already running", p.base.Source)
	}
	p.inc++
	cfg := p.base
	cfg.Incarnation = p.inc
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open publisher log: %w", err)
	}
	fmt.Fprintf(lf, "%s incarnation=%d\n", incarnationMarker, p.inc)
	cmd := exec.Command(p.exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stderr = lf
	cmd.SysProcAttr = childAttrs()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start publisher %s: %w", p.base.Source, err)
	}
	p.cmd, p.stdin, p.done, p.state = cmd, stdin, make(chan struct{}), "registering"
	done, inc := p.done, p.inc
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.handle(inc, sc.Bytes())
		}
		err := cmd.Wait()
		p.hist.Ended(p.base.Source, inc)
		lf.Close()
		p.mu.Lock()
		if p.state != "done" && p.state != "killed" && p.state != "failed" {
			p.hist.Problemf("publisher", "source %s incarnation %d exited unexpectedly (%v) while %s; see %s", p.base.Source, inc, err, p.state, p.logPath)
		}
		p.mu.Unlock()
		close(done)
	}()
	p.log.Info("publisher started", "source", p.base.Source, "incarnation", p.inc, "pid", cmd.Process.Pid)
	return nil
}

// handle records one line the child printed.
func (p *pubProc) handle(inc int, line []byte) {
	var e childEvent
	if err := json.Unmarshal(line, &e); err != nil {
		p.hist.Problemf("publisher", "source %s incarnation %d printed an unreadable line %q: %v", p.base.Source, inc, line, err)
		return
	}
	src := p.base.Source
	switch e.Ev {
	case "registered":
		p.hist.Registered(src, inc, e.FirstSeq, e.Session)
		p.setState("publishing")
		p.log.Info("publisher registered", "source", src, "incarnation", inc, "first_seq", e.FirstSeq)
	case "stable":
		if err := p.hist.Stable(src, inc, e.First, e.Last, e.Hashes); err != nil {
			p.hist.Problemf("publisher", "%v", err)
		}
	case "register_error":
		p.log.Debug("publisher registration failed; it retries", "source", src, "incarnation", inc, "err", e.Err)
	case "done":
		p.setState("done")
	case "error", "fatal":
		p.hist.Problemf("publisher", "source %s incarnation %d: %s", src, inc, e.Err)
		p.setState("failed")
	}
}

func (p *pubProc) setState(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = s
}

// waitRegistered waits until the current incarnation has registered (or
// is no longer trying), at most timeout.
func (p *pubProc) waitRegistered(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		state, running := p.state, p.cmd != nil
		p.mu.Unlock()
		if state != "registering" || !running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("publisher %s incarnation %d has not registered after %v", p.base.Source, p.inc, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill9 kills the current incarnation with SIGKILL and waits until its
// last reports are recorded.
func (p *pubProc) kill9() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	if cmd != nil {
		p.state = "killed"
	}
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop asks the current incarnation to finish (stdin closed: stop
// sending, flush, exit) and waits at most timeout before killing it.
func (p *pubProc) stop(timeout time.Duration) {
	p.mu.Lock()
	cmd, done, stdin := p.cmd, p.done, p.stdin
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = stdin.Close()
	select {
	case <-done:
		p.mu.Lock()
		p.cmd = nil
		p.mu.Unlock()
	case <-time.After(timeout):
		p.hist.Problemf("publisher", "source %s did not flush and exit within %v", p.base.Source, timeout)
		p.kill9()
	}
}

// deployment is the deployment file the publisher's incarnations are
// started with.
func (p *pubProc) deployment() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.base.Deployment
}

// handOut gives the publisher another deployment file, as an operator
// hands out a new one: a running incarnation finishes (stops sending,
// flushes, exits, as at the end of a schedule, within timeout) and the
// next one starts with the file. One still registering (a restarted
// publisher waits for the stores to free its source) has sent nothing and
// is killed instead. A publisher not running gets the file at its next
// start.
func (p *pubProc) handOut(file string, timeout time.Duration) error {
	p.mu.Lock()
	running, registering := p.cmd != nil, p.state == "registering"
	p.mu.Unlock()
	switch {
	case running && registering:
		p.kill9()
	case running:
		p.stop(timeout)
	}
	p.mu.Lock()
	p.base.Deployment = file
	p.mu.Unlock()
	if !running {
		return nil
	}
	return p.start()
}
