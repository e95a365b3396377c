package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"umstore/internal/cli"
	"umstore/placement"
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

// cluster is one schedule's deployment: its files, its two hosts, and the
// client addresses of each group.
type cluster struct {
	dir    string
	bin    string
	deploy string // the planned deployment file (the first of files)
	base   int
	hosts  []*host
	groups [][]string // each group's client addresses in the planned file
	ports  []int      // every store's raft and client port, from the deployment file
	log    *slog.Logger

	stores []StoreLayout // the deployment's stores

	mu sync.Mutex
	// files are the deployment files of the schedule: the planned one,
	// then one per replaced host (see addresses.go).
	files []*deployFile
}

// layout lists the deployment's stores.
func (c *cluster) layout() []StoreLayout { return c.stores }

// newCluster plans a two-host deployment in dir on free ports; with
// slowDisks each host gets a disk of its own (see disk). runArgs are added
// to every `umstored run` of either host.
func newCluster(ctx context.Context, dir, bin string, base int, slowDisks bool, runArgs []string, log *slog.Logger) (*cluster, error) {
	c := &cluster{dir: dir, bin: bin, deploy: filepath.Join(dir, "deployment.yaml"), base: base, log: log}
	args := []string{"plan", "--base-port", fmt.Sprint(base), "--out", c.deploy}
	for _, h := range hostAddrs {
		args = append(args, "--host", h.name+"="+h.addr)
	}
	if out, errOut, err := runTool(ctx, filepath.Join(bin, "umstored"), args...); err != nil {
		return nil, fmt.Errorf("umstored plan: %w\n%s%s", err, out, errOut)
	}
	d, err := placement.Load(c.deploy)
	if err != nil {
		return nil, fmt.Errorf("read the planned deployment: %w", err)
	}
	c.groups = cli.DeploymentGroups(d)
	c.files = []*deployFile{newDeployFile(c.deploy, d)}
	c.stores = layoutOf(d)
	for _, s := range d.Stores() {
		c.ports = append(c.ports, s.Store.RaftPort, s.Store.ClientPort)
	}
	for _, h := range hostAddrs {
		hh := &host{
			name: h.name, addr: h.addr, bin: bin, deploy: c.deploy, runArgs: runArgs, log: log,
			dataDir: filepath.Join(dir, h.name),
			admin:   fmt.Sprintf("%s:%d", h.addr, base+2000),
			logPath: filepath.Join(dir, h.name+".log"),
		}
		if slowDisks {
			d, err := newDisk(dir, h.name, log)
			if err != nil {
				c.closeDisks(false)
				return nil, fmt.Errorf("host %s disk: %w", h.name, err)
			}
			hh.disk, hh.dataDir = d, d.dataDir()
		}
		c.hosts = append(c.hosts, hh)
	}
	return c, nil
}

// closeDisks removes the hosts' disks (their daemons must have stopped),
// copying their contents beside the logs first when keep is set.
func (c *cluster) closeDisks(keep bool) error {
	var errs []error
	for _, h := range c.hosts {
		if h.disk == nil {
			continue
		}
		if keep {
			errs = append(errs, h.disk.copyTo(filepath.Join(c.dir, h.name+"-disk")))
		}
		errs = append(errs, h.disk.close())
		h.disk = nil
	}
	return errors.Join(errs...)
}

func (c *cluster) host(name string) *host {
	for _, h := range c.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// groupState is the part of `umstored status --json` the harness reads.
type groupState struct {
	Index  int    `json:"index"`
	Leader string `json:"leader"`
	Stores []struct {
		Name  string `json:"name"`
		Host  string `json:"host"`
		State string `json:"state"`
	} `json:"stores"`
}

// deploymentStatus runs `umstored status --json`: the operator's view,
// with the oldest deployment file that still places a host where it is
// (statusFile): the planned one until both hosts were replaced.
func (c *cluster) deploymentStatus(ctx context.Context) ([]groupState, bool, error) {
	out, errOut, err := runTool(ctx, filepath.Join(c.bin, "umstored"), "status", "--deployment", c.statusFile(), "--json")
	var st struct {
		Groups     []groupState `json:"groups"`
		Publishing bool         `json:"publishing"`
	}
	if jerr := json.Unmarshal([]byte(lastLine(out)), &st); jerr != nil {
		return nil, false, fmt.Errorf("umstored status --json: %w (exit: %v): %s%s", jerr, err, out, errOut)
	}
	return st.Groups, err == nil && st.Publishing, nil
}

// restored reports whether the deployment is whole again: every store up,
// every group with a leader, publishing possible, no store of either host
// still catching up, waiting to join, or failed, and every store applied
// through what its group's leader had applied when the wait first saw it
// (marks, by group: a store that came back and has not replayed what it
// missed is not whole yet, and may still meet damage in what it replays).
// The string says what is missing. A store that stopped itself on damaged
// files is its daemon's to start again (storehost does, docs/operations.md
// "A failed store"): the harness does not restart a daemon for it.
func (c *cluster) restored(ctx context.Context, marks map[int]uint64) (ok bool, why string) {
	for _, h := range c.hosts {
		if !h.running() {
			return false, "host " + h.name + " is not running"
		}
	}
	groups, publishing, err := c.deploymentStatus(ctx)
	if err != nil {
		return false, err.Error()
	}
	if !publishing {
		return false, "umstored status says publishing is not possible"
	}
	for _, g := range groups {
		if g.Leader == "" {
			return false, fmt.Sprintf("group %d has no leader", g.Index)
		}
		for _, s := range g.Stores {
			if s.State != "up" && s.State != "leader" {
				return false, fmt.Sprintf("store %s is %s", s.Name, s.State)
			}
		}
	}
	var all []storeStatus
	for _, h := range c.hosts {
		sts, err := h.status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range sts {
			if s.CatchingUp || s.WaitingToJoin || s.Error != "" {
				return false, fmt.Sprintf("store %s: catching_up=%v waiting_to_join=%v error=%q", s.Name, s.CatchingUp, s.WaitingToJoin, s.Error)
			}
		}
		all = append(all, sts...)
	}
	for _, s := range all {
		if s.State == "Leader" && marks[s.Group] == 0 {
			marks[s.Group] = s.AppliedIndex
		}
	}
	for _, s := range all {
		if s.AppliedIndex < marks[s.Group] {
			return false, fmt.Sprintf("store %s applied through %d, its group's leader had applied %d", s.Name, s.AppliedIndex, marks[s.Group])
		}
	}
	return true, ""
}

// waitRestored waits until restored holds, at most timeout.
func (c *cluster) waitRestored(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	marks := map[int]uint64{}
	for {
		ok, w := c.restored(ctx, marks)
		if why = w; ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not restored after %v: %s", timeout, why)
		}
		if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for restoration (%s): %w", why, err)
		}
	}
}

// dumpStacks saves every goroutine's stack of each running host daemon
// (its /debug/pprof/goroutine?debug=2) into the schedule's directory, as
// goroutines-<host>-<label>.txt, and returns the files written: the
// evidence of a deployment that did not come back (a wedged replication,
// a lock held), which its logs alone do not show.
func (c *cluster) dumpStacks(ctx context.Context, label string) []string {
	var files []string
	for _, h := range c.hosts {
		if !h.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.adminAddr()+"/debug/pprof/goroutine?debug=2", nil)
		if err != nil {
			cancel()
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			c.log.Warn("could not dump the daemon's stacks", "host", h.name, "err", err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			c.log.Warn("could not dump the daemon's stacks", "host", h.name, "status", resp.Status, "err", err)
			continue
		}
		path := filepath.Join(c.dir, fmt.Sprintf("goroutines-%s-%s.txt", h.name, label))
		if err := os.WriteFile(path, body, 0o644); err == nil {
			files = append(files, path)
		}
	}
	return files
}

// waitSnapshotted waits, at most timeout, until every store reports a
// snapshot of its own: from then on its log is compacted, so a member that
// is wiped catches up by snapshot install. It returns the stores that had
// none when it gave up.
func (c *cluster) waitSnapshotted(ctx context.Context, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for _, h := range c.hosts {
			sts, err := h.status(ctx)
			if err != nil {
				missing = append(missing, "host "+h.name)
				continue
			}
			for _, s := range sts {
				if s.SnapshotIndex == 0 {
					missing = append(missing, s.Name)
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) || sleepCtx(ctx, 200*time.Millisecond) != nil {
			return missing
		}
	}
}

// monitor samples both hosts' status until ctx ends, recording every
// change of a store's group identity and every moment two empty stores of
// a group catch up together on one host.
func (c *cluster) monitor(ctx context.Context, hist *History) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		c.sample(ctx, hist)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample reads both hosts' status once and records what it shows: group
// identities, failures, sources held, empty stores catching up together.
func (c *cluster) sample(ctx context.Context, hist *History) {
	{
		for _, h := range c.hosts {
			sts, err := h.status(ctx)
			if err != nil {
				continue // down or paused
			}
			catching := map[int][]string{}
			for _, s := range sts {
				hist.ObserveGroupID(h.name, s.Name, s.Group, s.GroupID)
				hist.ObserveStore(h.name, s)
				if s.CatchingUp {
					catching[s.Group] = append(catching[s.Group], s.Name)
				}
			}
			for g, names := range catching {
				if len(names) > 1 {
					hist.ObserveCatchUp(CatchUpObs{Host: h.name, Group: g, Stores: names, Via: "status", At: time.Now()})
				}
			}
		}
	}
}

// plannedPorts lists the raft and client ports `umstored plan` gives two
// groups of three stores from base.
func plannedPorts(base int) []int {
	var ports []int
	for g := 1; g <= 2; g++ {
		for s := 1; s <= 3; s++ {
			ports = append(ports, base+10*g+s, base+1000+10*g+s)
		}
	}
	return ports
}

// storePorts lists the deployment's raft and client ports.
func (c *cluster) storePorts() []int { return c.ports }

// portsFree reports whether every port the planner gives base, and the
// admin port, is free on both host addresses.
func portsFree(base int) bool {
	ports := append(plannedPorts(base), base+2000)
	for _, h := range hostAddrs {
		for _, p := range ports {
			ln, err := net.Listen("tcp", net.JoinHostPort(h.addr, fmt.Sprint(p)))
			if err != nil {
				return false
			}
			ln.Close()
		}
	}
	return true
}

// Base ports are picked below the kernel's ephemeral range (32768 and up),
// so an outgoing connection never holds a port a restarting store needs.
const (
	basePortMin = 10000
	basePortMax = 18900
)

// freeBasePort finds a free base port, starting from a point derived from
// start so consecutive schedules use different ports.
func freeBasePort(start int) (int, error) {
	n := (basePortMax - basePortMin) / 100
	for i := 0; i < n; i++ {
		base := basePortMin + ((start+i)%n)*100
		if portsFree(base) {
			return base, nil
		}
	}
	return 0, errors.New("no free range of ports on 127.0.0.2 and 127.0.0.3")
}

// buildBinaries builds umstored into dir.
func buildBinaries(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "umstore/cmd/umstored")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build umstore/cmd/umstored: %w\n%s", err, out)
	}
	return nil
}

// runTool runs a command, bounded, and returns its stdout and stderr.
func runTool(ctx context.Context, path string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %w", filepath.Base(path), args[0], err)
	}
	return stdout.String(), stderr.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// childAttrs makes a child die with the harness, even on kill -9, and puts
// it in its own process group so a Ctrl-C in the terminal reaches only the
// harness, which then stops everything in order.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// processAlive reports whether pid is a live process (a zombie, killed but
// not yet reaped, is not).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // cannot tell: assume it lives
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
