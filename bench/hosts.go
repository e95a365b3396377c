package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A deployment of `umstored run` processes, one per loopback "host", as an
// operator would run it: `umstored plan` lays the stores out, each host's
// daemon runs its stores. The bench uses two layouts.
type layout struct {
	Name   string     // as in the results: "1x3", "2x3"
	Hosts  []hostSpec // names and loopback addresses
	Groups int        // umstored plan --groups
	What   string     // for the report
}

type hostSpec struct{ Name, IP string }

var (
	// oneGroup is one group of three stores, one on each of three hosts:
	// as many copies of each message as JetStream R3 keeps, so umstore ÷
	// JetStream is the storage engine's own efficiency.
	oneGroup = layout{Name: "1x3", Groups: 1,
		Hosts: []hostSpec{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}, {"C", "127.0.0.4"}},
		What:  "one group of three stores on three hosts (127.0.0.2: G1S1, 127.0.0.3: G1S2, 127.0.0.4: G1S3)"}
	// twoHosts is the headline topology of `umstored dev` on two real
	// hosts: two groups of three, laid out 2+1 / 1+2.
	twoHosts = layout{Name: "2x3", Groups: 2,
		Hosts: []hostSpec{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}},
		What:  "two groups of three on two hosts (127.0.0.2: G1S1 G1S2 G2S1, 127.0.0.3: G1S3 G2S2 G2S3)"}
)

func layoutByName(name string) (layout, error) {
	for _, l := range []layout{oneGroup, twoHosts} {
		if l.Name == name {
			return l, nil
		}
	}
	return layout{}, fmt.Errorf("unknown layout %q (give 1x3 or 2x3)", name)
}

// umHosts is a running deployment of one `umstored run` per host.
type umHosts struct {
	layout     layout
	deployment string
	hosts      []*umHost
}

// umHost is one host's daemon; start restarts it after stop or kill9.
type umHost struct {
	spec      hostSpec
	dir       string // its --data-dir
	admin     string // its --admin-addr
	logPath   string
	args      []string
	umstored  string
	p         *proc
	startedAt time.Time
}

// startHosts plans the layout into dir/deployment.yaml, starts every host's
// daemon with the extra args, and waits until every host is ready.
func startHosts(ctx context.Context, b umBins, dir string, lay layout, args []string) (*umHosts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var ips []string
	for _, h := range lay.Hosts {
		ips = append(ips, h.IP)
	}
	base, err := freeBasePort(ips...)
	if err != nil {
		return nil, err
	}
	u := &umHosts{layout: lay, deployment: filepath.Join(dir, "deployment.yaml")}
	planArgs := []string{"plan", "--groups", strconv.Itoa(lay.Groups), "--base-port", strconv.Itoa(base), "--out", u.deployment}
	for _, h := range lay.Hosts {
		planArgs = append(planArgs, "--host", h.Name+"="+h.IP)
	}
	if out, err := exec.CommandContext(ctx, b.umstored, planArgs...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("umstored %s: %v\n%s", strings.Join(planArgs, " "), err, out)
	}
	for _, h := range lay.Hosts {
		port, err := freePort(h.IP)
		if err != nil {
			return nil, err
		}
		host := &umHost{spec: h, dir: filepath.Join(dir, h.Name), admin: fmt.Sprintf("%s:%d", h.IP, port),
			logPath: filepath.Join(dir, h.Name+".log"), umstored: b.umstored}
		host.args = append([]string{"run", "--deployment", u.deployment, "--host", h.Name, "--data-dir", host.dir, "--admin-addr", host.admin}, args...)
		u.hosts = append(u.hosts, host)
	}
	// Every host first, then wait: a new group bootstraps only once all of
	// its members are up.
	for _, h := range u.hosts {
		if err := h.start(); err != nil {
			u.stop()
			return nil, err
		}
	}
	for _, h := range u.hosts {
		if err := waitReadyz(ctx, h.admin, 90*time.Second); err != nil {
			u.stop()
			return nil, fmt.Errorf("host %s: %w (log %s)", h.spec.Name, err, h.logPath)
		}
	}
	return u, nil
}

func (h *umHost) start() error {
	p, err := startProc("umstored run "+h.spec.Name, h.umstored, h.args, h.logPath, "")
	if err != nil {
		return err
	}
	h.p, h.startedAt = p, time.Now()
	return nil
}

// stop stops every host's daemon gracefully (SIGTERM, SIGKILL after 15 s).
func (u *umHosts) stop() {
	for _, h := range u.hosts {
		if h.p != nil {
			h.p.stop(15 * time.Second)
		}
	}
}

// pids are the hosts' daemons, for /proc.
func (u *umHosts) pids() []string {
	var ps []string
	for _, h := range u.hosts {
		ps = append(ps, h.p.pid())
	}
	return ps
}

// stores is how many stores the deployment has.
func (l layout) stores() int { return 3 * l.Groups }

// statuses reads every host's /v1/status.
func (u *umHosts) statuses(ctx context.Context) ([]hostStatus, error) {
	var all []hostStatus
	for _, h := range u.hosts {
		st, err := getStatus(ctx, h.admin)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.spec.Name, err)
		}
		all = append(all, st)
	}
	return all, nil
}
