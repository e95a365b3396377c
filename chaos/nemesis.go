package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FaultKind names one kind of fault the nemesis injects.
type FaultKind string

// The faults. Every host fault hits one host only, and the deployment is
// healed and restored before the next one: the 2+1/1+2 layout is designed
// to survive the loss of one host, not of both.
const (
	// KillHost is a host crash (kill -9 of its daemon), then a restart
	// with its state.
	KillHost FaultKind = "kill-host"
	// WipeHost is a host crash, then a restart with its data directory
	// gone (a replaced disk): its stores must rejoin empty, staged.
	WipeHost FaultKind = "wipe-host"
	// WipeCrash is WipeHost, then another crash while the empty stores
	// are catching up, then a restart with what they had caught up.
	WipeCrash FaultKind = "wipe-crash"
	// PauseHost freezes a host (SIGSTOP) and thaws it (SIGCONT): a hung
	// machine, a long GC pause, a VM migration.
	PauseHost FaultKind = "pause-host"
	// Partition drops every packet between the two host addresses
	// (iptables), then heals the link.
	Partition FaultKind = "partition"
	// KillPublisher kills a publisher with -9 and starts a new incarnation,
	// which must resume above everything the old one was told was stable.
	KillPublisher FaultKind = "kill-publisher"
	// SlowDisk throttles the writes of a host's disk to a few per second
	// (blkio cgroup on the host's loop-mounted disk), then lifts the limit.
	SlowDisk FaultKind = "slow-disk"
)

// Fault is one planned fault.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Host is the host a host fault hits.
	Host string `json:"host,omitempty"`
	// Source is the publisher a KillPublisher fault hits.
	Source string `json:"source,omitempty"`
	// Hold is how long the fault lasts before it is healed.
	Hold time.Duration `json:"hold"`
	// Quiet is how long the deployment runs normally after it is restored,
	// before the next fault.
	Quiet time.Duration `json:"quiet"`
	// AlsoKillPublisher, for a host fault, names a publisher that is also
	// killed with -9 and restarted PublisherAt into the fault.
	AlsoKillPublisher string        `json:"also_kill_publisher,omitempty"`
	PublisherAt       time.Duration `json:"publisher_at,omitempty"`
	// IOPS is the write operations per second a SlowDisk fault allows.
	IOPS int `json:"iops,omitempty"`
}

func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.Host != "" {
		b.WriteString(" host " + f.Host)
	}
	if f.Kind == Partition {
		b.WriteString(" " + hostAddrs[0].name + "|" + hostAddrs[1].name)
	}
	if f.Source != "" {
		b.WriteString(" source " + f.Source)
	}
	if f.Kind == SlowDisk {
		fmt.Fprintf(&b, " to %d writes/s", f.IOPS)
	}
	fmt.Fprintf(&b, " for %v", f.Hold)
	if f.AlsoKillPublisher != "" {
		fmt.Fprintf(&b, " (+ kill-publisher %s at %v)", f.AlsoKillPublisher, f.PublisherAt)
	}
	return b.String()
}

// hostFault reports whether f hits a host (and so is followed by a wait
// for full restoration).
func (f Fault) hostFault() bool { return f.Kind != KillPublisher }

// injected is how many faults f counts for.
func (f Fault) injected() int {
	if f.AlsoKillPublisher != "" {
		return 2
	}
	return 1
}

// planConfig is what the planner needs to know.
type planConfig struct {
	Faults     int
	Partitions bool
	SlowDisks  bool
	Sources    []string
	// Only, if not empty, restricts the faults drawn to these kinds.
	Only []FaultKind
	// LongOutages makes half of the host crashes and pauses last 35-45 s:
	// longer than source-activity-timeout (30 s), so a publisher restarted
	// meanwhile registers while the host's groups are unreachable.
	LongOutages bool
}

// allKinds lists every fault kind, for --kinds.
var allKinds = []FaultKind{KillHost, WipeHost, WipeCrash, PauseHost, Partition, SlowDisk, KillPublisher}

// planSchedule draws a schedule of faults from rng: the same seed always
// gives the same plan.
func planSchedule(rng *rand.Rand, cfg planConfig) []Fault {
	type weighted struct {
		kind   FaultKind
		weight int
	}
	kinds := []weighted{{KillHost, 3}, {WipeHost, 2}, {WipeCrash, 1}, {PauseHost, 2}, {KillPublisher, 2}}
	if cfg.Partitions {
		kinds = append(kinds, weighted{Partition, 2})
	}
	if cfg.SlowDisks {
		kinds = append(kinds, weighted{SlowDisk, 2})
	}
	if len(cfg.Only) > 0 {
		kinds = slices.DeleteFunc(kinds, func(k weighted) bool { return !slices.Contains(cfg.Only, k.kind) })
	}
	if len(kinds) == 0 {
		return nil
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)).Round(100*time.Millisecond)
	}
	var plan []Fault
	for range cfg.Faults {
		n := rng.IntN(total)
		var kind FaultKind
		for _, k := range kinds {
			if n < k.weight {
				kind = k.kind
				break
			}
			n -= k.weight
		}
		f := Fault{Kind: kind, Quiet: between(500*time.Millisecond, 3*time.Second)}
		switch kind {
		case KillPublisher:
			f.Source = cfg.Sources[rng.IntN(len(cfg.Sources))]
			f.Hold = between(0, 2*time.Second)
		case PauseHost:
			f.Hold = between(500*time.Millisecond, 6*time.Second)
		case Partition:
			f.Hold = between(2*time.Second, 8*time.Second)
		case SlowDisk:
			f.Hold = between(2*time.Second, 8*time.Second)
			f.IOPS = 5 + rng.IntN(46)
		default:
			f.Hold = between(1*time.Second, 5*time.Second)
		}
		// Drawn only when asked for, so the plans of a seed do not change
		// with the option off.
		if cfg.LongOutages && (kind == KillHost || kind == PauseHost) && rng.IntN(2) == 0 {
			f.Hold = between(35*time.Second, 45*time.Second)
		}
		if f.hostFault() {
			f.Host = hostAddrs[rng.IntN(len(hostAddrs))].name
			if kind == Partition {
				f.Host = "" // a partition cuts both hosts off from each other
			}
			if rng.IntN(3) == 0 {
				f.AlsoKillPublisher = cfg.Sources[rng.IntN(len(cfg.Sources))]
				f.PublisherAt = between(0, f.Hold)
			}
		}
		plan = append(plan, f)
	}
	return plan
}

// nemesis injects faults into one schedule's deployment.
type nemesis struct {
	c    *cluster
	pubs map[string]*pubProc
	part *partitioner // nil when partitions are off
	hist *History
	log  *slog.Logger
}

// inject runs one fault from start to heal. It returns once the fault is
// healed (hosts running, link whole, publisher restarted); waiting for the
// deployment to be restored is the caller's job.
func (n *nemesis) inject(ctx context.Context, f Fault) error {
	rec := FaultRecord{Kind: f.Kind, Target: f.Host + f.Source, Start: time.Now()}
	if f.Kind == Partition {
		rec.Target = hostAddrs[0].name + "|" + hostAddrs[1].name
	}
	defer func() { rec.End = time.Now(); n.hist.Fault(rec) }()
	n.log.Info("fault", "fault", f.String())
	// The publisher kill inside a host fault happens in the background, at
	// its offset; the fault's heal waits for it.
	var pubDone chan error
	if f.AlsoKillPublisher != "" {
		pubDone = make(chan error, 1)
		go func() {
			if err := sleepCtx(ctx, f.PublisherAt); err != nil {
				pubDone <- err
				return
			}
			start := time.Now()
			err := n.restartPublisher(ctx, f.AlsoKillPublisher, 300*time.Millisecond)
			n.hist.Fault(FaultRecord{Kind: KillPublisher, Target: f.AlsoKillPublisher, Start: start, End: time.Now(), Note: "during " + string(f.Kind)})
			pubDone <- err
		}()
	}
	waitPub := func() error {
		if pubDone == nil {
			return nil
		}
		return <-pubDone
	}
	var err error
	switch f.Kind {
	case KillPublisher:
		err = n.restartPublisher(ctx, f.Source, f.Hold)
	case KillHost:
		h := n.c.host(f.Host)
		h.kill9()
		_ = sleepCtx(ctx, f.Hold)
		err = h.start("restart with state after kill -9")
	case WipeHost:
		h := n.c.host(f.Host)
		h.kill9()
		if err = h.wipe(); err == nil {
			_ = sleepCtx(ctx, f.Hold)
			err = h.start("restart with the data directory wiped")
		}
	case WipeCrash:
		err = n.wipeCrash(ctx, f)
		rec.Note = "crashed again while catching up"
	case PauseHost:
		h := n.c.host(f.Host)
		if err = h.pause(); err == nil {
			_ = sleepCtx(ctx, f.Hold)
			err = h.resume()
		}
	case SlowDisk:
		h := n.c.host(f.Host)
		if h.disk == nil {
			err = errors.New("a slow disk was planned but slow disks are off")
			break
		}
		pid := h.pid()
		if err = h.disk.slow(pid, f.IOPS); err == nil {
			_ = sleepCtx(ctx, f.Hold)
			err = h.disk.unslow(pid)
		}
	case Partition:
		if n.part == nil {
			err = errors.New("a partition was planned but partitions are off")
			break
		}
		if err = n.part.cut(hostAddrs[0].addr, hostAddrs[1].addr, n.c.storePorts()); err == nil {
			_ = sleepCtx(ctx, f.Hold)
			err = n.part.heal()
		}
	default:
		err = fmt.Errorf("unknown fault %q", f.Kind)
	}
	return errors.Join(err, waitPub())
}

// wipeCrash wipes a host, restarts it, crashes it again while its empty
// stores catch up (or wait for their turn), and restarts it with what they
// had by then.
func (n *nemesis) wipeCrash(ctx context.Context, f Fault) error {
	h := n.c.host(f.Host)
	h.kill9()
	if err := h.wipe(); err != nil {
		return err
	}
	if err := h.start("restart with the data directory wiped"); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		sts, err := h.status(ctx)
		joining := false
		for _, s := range sts {
			joining = joining || s.CatchingUp || s.WaitingToJoin
		}
		if err == nil && joining {
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	_ = sleepCtx(ctx, f.Hold/10)
	h.kill9()
	_ = sleepCtx(ctx, f.Hold)
	return h.start("restart after a crash during catch-up")
}

// restartPublisher kills a publisher with -9, waits, and starts its next
// incarnation.
func (n *nemesis) restartPublisher(ctx context.Context, source string, down time.Duration) error {
	p := n.pubs[source]
	if p == nil {
		return fmt.Errorf("no publisher for source %q", source)
	}
	p.kill9()
	_ = sleepCtx(ctx, down)
	return p.start()
}

// healAll undoes whatever may still be in force: a paused host is thawed,
// a stopped one started, the link healed.
func (n *nemesis) healAll() error {
	var errs []error
	if n.part != nil {
		errs = append(errs, n.part.heal())
	}
	for _, h := range n.c.hosts {
		errs = append(errs, h.resume())
		if !h.running() {
			errs = append(errs, h.start("restart while healing everything"))
		}
	}
	return errors.Join(errs...)
}

// ruleTagPrefix starts the comment on every iptables rule the harness
// adds; the rest of the tag is the harness's process id.
const ruleTagPrefix = "umstore-chaos-"

// partitioner cuts and heals the link between the two host addresses with
// iptables rules that carry its own comment, and deletes exactly the rules
// it added.
type partitioner struct {
	tag string
	log *slog.Logger

	mu    sync.Mutex
	rules [][]string // rule specs in force (without -I/-D)
}

// newPartitioner checks that iptables is there and usable, and removes
// rules left by an earlier harness process that died before it could.
func newPartitioner(log *slog.Logger) (*partitioner, error) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("partitions need iptables (apt-get install -y iptables), or run with --partitions=false: %w", err)
	}
	if out, err := exec.Command("iptables", "-w", "5", "-S", "INPUT").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("iptables is installed but not usable (root needed): %w: %s", err, out)
	}
	p := &partitioner{tag: ruleTagPrefix + strconv.Itoa(os.Getpid()), log: log}
	if err := removeStaleRules(log); err != nil {
		return nil, err
	}
	return p, nil
}

// cut drops every packet between a and b to or from one of ports (the
// deployment's raft and client ports): the link between the two hosts is
// cut for this deployment only, so other tests on the same addresses are
// not disturbed.
func (p *partitioner) cut(a, b string, ports []int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := make([]string, len(ports))
	for i, port := range ports {
		list[i] = strconv.Itoa(port)
	}
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		for _, dir := range []string{"--dports", "--sports"} {
			spec := []string{"INPUT", "-s", pair[0], "-d", pair[1], "-p", "tcp", "-m", "multiport", dir, strings.Join(list, ","),
				"-m", "comment", "--comment", p.tag, "-j", "DROP"}
			if out, err := exec.Command("iptables", append([]string{"-w", "5", "-I"}, spec...)...).CombinedOutput(); err != nil {
				return fmt.Errorf("iptables -I %s: %w: %s", strings.Join(spec, " "), err, out)
			}
			p.rules = append(p.rules, spec)
		}
	}
	p.log.Info("link cut", "between", a+" "+b, "ports", strings.Join(list, ","))
	return nil
}

// heal deletes every rule this partitioner added.
func (p *partitioner) heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	kept := p.rules[:0]
	for _, spec := range p.rules {
		if out, err := exec.Command("iptables", append([]string{"-w", "5", "-D"}, spec...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -D %s: %w: %s", strings.Join(spec, " "), err, out))
			kept = append(kept, spec)
		}
	}
	if len(p.rules) > 0 && len(kept) == 0 {
		p.log.Info("link healed")
	}
	p.rules = kept
	return errors.Join(errs...)
}

// removeStaleRules deletes rules tagged by a harness process that no
// longer exists (it was killed before it could delete them). Rules of a
// running harness and rules without our tag are never touched.
func removeStaleRules(log *slog.Logger) error {
	out, err := exec.Command("iptables", "-w", "5", "-S", "INPUT").Output()
	if err != nil {
		return fmt.Errorf("iptables -S INPUT: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		i := strings.Index(line, ruleTagPrefix)
		if i < 0 || !strings.HasPrefix(line, "-A INPUT ") {
			continue
		}
		pidText := strings.TrimRight(line[i+len(ruleTagPrefix):], "\" ")
		if j := strings.IndexAny(pidText, "\" "); j >= 0 {
			pidText = pidText[:j]
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || processAlive(pid) {
			continue
		}
		args := append([]string{"-w", "5", "-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)
		for k := range args {
			args[k] = strings.Trim(args[k], "\"")
		}
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("remove stale rule %q: %w: %s", line, err, out)
		}
		log.Warn("removed an iptables rule left by a dead chaos run", "rule", line)
	}
	return nil
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
