package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
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

// rcvProc is the harness's handle on the durable receiver child of one
// source: it starts incarnations (with the killed one's session, or a new
// one), records what each is handed, and kills them.
type rcvProc struct {
	exe     string
	base    receiverChildConfig // Source, Deployment, Name
	logPath string
	hist    *History
	log     *slog.Logger

	mu      sync.Mutex
	inc     int
	session string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{} // closed once the process exited and its stdout is read
	state   string        // registering, following, killed, closed, failed
}

// newSession is a fresh receiver session.
func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// start runs the next incarnation. With takeover it gets a session of its
// own, so the stores let it in only once they expired the previous
// incarnation's; otherwise it reuses the previous session and is let in
// at once (what a supervisor that keeps the session does).
func (p *rcvProc) start(takeover bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("durable receiver of %s is already running", p.base.Source)
	}
	p.inc++
	if p.session == "" || takeover {
		p.session = newSession()
	}
	cfg := p.base
	cfg.Incarnation, cfg.Session = p.inc, p.session
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open durable receiver log: %w", err)
	}
	fmt.Fprintf(lf, "%s incarnation=%d takeover=%v\n", incarnationMarker, p.inc, takeover && p.inc > 1)
	cmd := exec.Command(p.exe)
	cmd.Env = append(os.Environ(), receiverEnv+"="+string(js))
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
	p.hist.DurableStarted(p.base.Source, p.inc, takeover && p.inc > 1, time.Now())
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start durable receiver of %s: %w", p.base.Source, err)
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
		lf.Close()
		p.mu.Lock()
		state := p.state
		p.mu.Unlock()
		if state != "killed" && state != "closed" {
			p.hist.DurableEnded(p.base.Source, inc, "exited", 0, time.Now())
			p.hist.Problemf("receiver", "the durable receiver of %s, incarnation %d, exited by itself (%v) while %s; see %s", p.base.Source, inc, err, state, p.logPath)
		}
		close(done)
	}()
	p.log.Info("durable receiver started", "source", p.base.Source, "incarnation", p.inc, "takeover", takeover && p.inc > 1, "pid", cmd.Process.Pid)
	return nil
}

// handle records one line the child printed.
func (p *rcvProc) handle(inc int, line []byte) {
	var e receiverEvent
	if err := json.Unmarshal(line, &e); err != nil {
		p.hist.Problemf("receiver", "the durable receiver of %s, incarnation %d, printed an unreadable line %q: %v", p.base.Source, inc, line, err)
		return
	}
	src := p.base.Source
	at := time.Unix(0, e.At)
	switch e.Ev {
	case "d":
		p.hist.DurableHanded(src, inc, Handed{Seq: e.Seq, Hash: e.Hash, PubInc: e.PubInc, Damage: e.Damage, At: at})
	case "missing", "unpublished": // a range no group holds, or one its publisher declared never published: told either way
		p.hist.DurableHanded(src, inc, Handed{Seq: e.Seq, Missing: true, Through: e.Through, At: at})
	case "registered":
		p.hist.DurableRegistered(src, inc, e.Resume, e.Consumed, e.Groups, at)
		p.setState("following")
		p.log.Info("durable receiver registered", "source", src, "incarnation", inc, "resume", e.Resume, "consumed", e.Consumed)
	case "register_error", "follow_error":
		p.log.Warn("durable receiver: "+e.Ev+"; it retries", "source", src, "incarnation", inc, "err", e.Err)
	case "closed":
		p.mu.Lock()
		if p.state != "killed" {
			p.state = "closed"
		}
		p.mu.Unlock()
		p.hist.DurableHeld(src, inc, e.Held)
		p.hist.DurableEnded(src, inc, "closed", e.Consumed, time.Now())
	case "fatal":
		p.hist.Problemf("receiver", "the durable receiver of %s, incarnation %d: %s", src, inc, e.Err)
		p.setState("failed")
	}
}

func (p *rcvProc) setState(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != "killed" && p.state != "closed" {
		p.state = s
	}
}

// kill9 kills the current incarnation with SIGKILL (the moment is
// recorded as its end) and waits until everything it printed is recorded.
func (p *rcvProc) kill9() {
	p.mu.Lock()
	cmd, done, inc := p.cmd, p.done, p.inc
	p.cmd = nil
	if cmd != nil {
		p.state = "killed"
	}
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	p.hist.DurableEnded(p.base.Source, inc, "killed", 0, time.Now())
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop asks the current incarnation to finish (stdin closed: it stops
// following and closes, recording its position) and waits at most timeout
// before killing it.
func (p *rcvProc) stop(timeout time.Duration) {
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
		p.hist.Problemf("receiver", "the durable receiver of %s did not close and exit within %v", p.base.Source, timeout)
		p.kill9()
	}
}

// waitCaughtUp waits, at most timeout, until the current incarnation has
// registered and been handed everything up to the highest acknowledged
// message.
func (p *rcvProc) waitCaughtUp(timeout time.Duration) error {
	want := p.hist.MaxAcked(p.base.Source)
	deadline := time.Now().Add(timeout)
	for {
		inc, registered, last := p.hist.DurableProgress(p.base.Source)
		if registered && last >= want {
			return nil
		}
		if time.Now().After(deadline) {
			if !registered {
				return fmt.Errorf("the durable receiver of %s (incarnation %d) had not registered after %v", p.base.Source, inc, timeout)
			}
			return fmt.Errorf("the durable receiver of %s (incarnation %d) reached %d of %d within %v", p.base.Source, inc, last, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRegistered waits, at most timeout, until the current incarnation has
// registered (a paced source's publisher is held back at the retention
// limit while its receiver is away: it can flush only once it is back).
func (p *rcvProc) waitRegistered(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		inc, registered, _ := p.hist.DurableProgress(p.base.Source)
		if registered {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the durable receiver of %s (incarnation %d) had not registered after %v", p.base.Source, inc, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deployment is the deployment file the receiver's incarnations are
// started with.
func (p *rcvProc) deployment() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.base.Deployment
}

// handOut gives the durable receiver another deployment file: a running
// incarnation closes (recording its position, within timeout) and the
// next one starts with the file and the same session, so it is let in at
// once and resumes one past what the closed one consumed.
func (p *rcvProc) handOut(file string, timeout time.Duration) error {
	p.mu.Lock()
	running := p.cmd != nil
	p.mu.Unlock()
	if running {
		p.stop(timeout)
	}
	p.mu.Lock()
	p.base.Deployment = file
	p.mu.Unlock()
	if !running {
		return nil
	}
	return p.start(false)
}
