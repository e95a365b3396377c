package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process (umstored) that the bench starts and must stop.
type proc struct {
	name  string
	cmd   *exec.Cmd
	log   *os.File
	done  chan struct{}
	err   error
	ready chan struct{} // closed when a stdout line equals readyLine
}

var (
	procsMu sync.Mutex
	procs   = map[*proc]bool{}
)

// startProc starts bin with args. Its stdout and stderr go to logPath; if
// readyLine is not empty, ready is closed when stdout prints that line.
// The child gets its own process group (a Ctrl-C on the terminal reaches
// only the bench, which stops the children in order) and is killed by the
// kernel if the bench dies without stopping it (Pdeathsig).
func startProc(name, bin string, args []string, logPath, readyLine string) (*proc, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(lf, "=== %s %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stderr = lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: lf, done: make(chan struct{}), ready: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	procsMu.Lock()
	procs[p] = true
	procsMu.Unlock()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(lf, line)
			if readyLine != "" && strings.TrimSpace(line) == readyLine {
				once.Do(func() { close(p.ready) })
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		<-copied
		p.err = cmd.Wait()
		lf.Close()
		procsMu.Lock()
		delete(procs, p)
		procsMu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// waitReady waits for the ready line, the process's exit, or the timeout.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready: %v (log: %s)", p.name, p.err, p.log.Name())
	case <-t.C:
		return fmt.Errorf("%s not ready after %v (log: %s)", p.name, timeout, p.log.Name())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop asks the process to stop (SIGTERM: the stores stop gracefully) and
// kills it if it has not exited after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill9 kills the process at once, as a crash would.
func (p *proc) kill9() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stopAllProcs stops every child still running; the bench calls it on
// every way out.
func stopAllProcs() {
	procsMu.Lock()
	var ps []*proc
	for p := range procs {
		ps = append(ps, p)
	}
	procsMu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(15 * time.Second) }()
	}
	wg.Wait()
}

// freePort returns a TCP port on ip that was free a moment ago.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// umstorePorts returns the port offsets a deployment with base port BASE
// uses: raft BASE+10*g+n, client BASE+1000+10*g+n (two groups of three).
func umstorePorts(base int) []int {
	var ps []int
	for g := 1; g <= 2; g++ {
		for n := 1; n <= 3; n++ {
			ps = append(ps, base+10*g+n, base+1000+10*g+n)
		}
	}
	return ps
}

// freeBasePort picks a base port whose every umstore port is free on every ip.
func freeBasePort(ips ...string) (int, error) {
	for try := 0; try < 100; try++ {
		base := 20000 + 100*rand.IntN(300) // 20000..49900; ports up to base+1023
		ok := true
		var held []net.Listener
		for _, port := range umstorePorts(base) {
			for _, ip := range ips {
				ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
				if err != nil {
					ok = false
					break
				}
				held = append(held, ln)
			}
			if !ok {
				break
			}
		}
		for _, ln := range held {
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free range of ports for umstore found")
}
