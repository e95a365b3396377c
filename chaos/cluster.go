package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"umstore/internal/cli"
	"umstore/placement"
)

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

	// previous is the previous release's binary directory when the
	// schedule upgrades hosts (kind_upgrade.go), else ""; final is set
	// once both hosts run bin, the new one. Both under mu.
	previous string
	final    bool

	mu sync.Mutex
	// files are the deployment files of the schedule: the planned one,
	// then one per replaced host (see addresses.go).
	files []*deployFile
}

// layout lists the deployment's stores.
func (c *cluster) layout() []StoreLayout { return c.stores }

// newCluster plans a two-host deployment in dir on free ports; with
// slowDisks each host gets a disk of its own (see disk). runArgs are added
// to every `umstored run` of either host. previous, when not "", is the
// previous release's binary directory: the deployment is planned with it
// and both hosts start on it (upgrade-host, kind_upgrade.go).
func newCluster(ctx context.Context, dir, bin, previous string, base int, slowDisks bool, runArgs []string, log *slog.Logger) (*cluster, error) {
	c := &cluster{dir: dir, bin: bin, previous: previous, deploy: filepath.Join(dir, "deployment.yaml"), base: base, log: log}
	first := bin // the binary that plans and that both hosts start on
	if previous != "" {
		first = previous
	}
	args := []string{"plan", "--base-port", fmt.Sprint(base), "--out", c.deploy}
	for _, h := range hostAddrs {
		args = append(args, "--host", h.name+"="+h.addr)
	}
	if out, errOut, err := runTool(ctx, filepath.Join(first, "umstored"), args...); err != nil {
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
			name: h.name, addr: h.addr, bin: first, deploy: c.deploy, runArgs: runArgs, log: log,
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

// otherHost is the host that is not h (the deployment has two).
func (c *cluster) otherHost(h *host) *host {
	for _, o := range c.hosts {
		if o != h {
			return o
		}
	}
	return nil
}
