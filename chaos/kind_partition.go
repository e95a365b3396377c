package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Partition drops every packet between the two host addresses (iptables),
// then heals the link.
const Partition FaultKind = "partition"

func init() {
	registerKind(&kindSpec{
		Kind: Partition, Order: 60, Weight: 2, Target: targetLink, Needs: needPartitions,
		Help:     "drop every packet between the two hosts' addresses (127.0.0.2 and 127.0.0.3, or where replace-host moved them) on the deployment's ports (iptables), then heal",
		Plan:     holdBetween(2*time.Second, 8*time.Second),
		Describe: func(Fault) string { return " " + hostAddrs[0].name + "|" + hostAddrs[1].name },
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			if n.part == nil {
				return errors.New("a partition was planned but partitions are off")
			}
			// The rules match source and destination addresses: the hosts'
			// current ones (a replaced host is elsewhere than it started).
			if err := n.part.cut(n.c.hosts[0].address(), n.c.hosts[1].address(), n.c.storePorts()); err != nil {
				return err
			}
			_ = sleepCtx(ctx, f.Hold)
			return n.part.heal()
		},
	})
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
