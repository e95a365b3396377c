package storehost

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
)

// Configs returns the configuration of every store d places on host, in
// d's order: each store's name and group, its group's members and every
// other group (names, raft and client addresses), its data directory
// dataDir/<store name>, the host's address as the address its connections
// leave from, the transport security of d's security section, and opts.
// Logger and Admission are left for the caller: Start shares one admission
// among the host's stores.
func Configs(d *placement.Deployment, host, dataDir string, opts Options) ([]storegroup.Config, error) {
	if _, ok := d.HostByName(host); !ok {
		return nil, fmt.Errorf("host %q is not in the deployment %q (its hosts: %s)", host, d.Name, hostNames(d))
	}
	refs := d.StoresOn(host)
	if len(refs) == 0 {
		return nil, fmt.Errorf("the deployment places no stores on host %q", host)
	}
	sec, err := cli.StoreSecurity(d)
	if err != nil {
		return nil, err
	}
	cfgs := make([]storegroup.Config, len(refs))
	for i, ref := range refs {
		cfgs[i] = storeConfig(d, ref, dataDir, sec, opts)
	}
	return cfgs, nil
}

// storeConfig is the configuration of one store of d.
func storeConfig(d *placement.Deployment, ref placement.StoreRef, dataDir string, sec storegroup.Security, opts Options) storegroup.Config {
	cfg := storegroup.DefaultConfig()
	topology(d).Place(&cfg, ref.Store.Name)
	cfg.DataDir = filepath.Join(dataDir, ref.Store.Name)
	cfg.LocalIP = net.ParseIP(ref.Host.Address)
	cfg.Security = sec
	cfg.Lock = opts.Lock
	cfg.RetentionMaxBytes, cfg.RetentionMaxMessages, cfg.RetentionMaxAge = opts.RetentionMaxBytes, opts.RetentionMaxMessages, opts.RetentionMaxAge
	if opts.RepairBytesPerSecond > 0 {
		cfg.RepairBytesPerSecond = opts.RepairBytesPerSecond
	}
	if opts.SourceActivityTimeout > 0 {
		cfg.SourceActivityTimeout = opts.SourceActivityTimeout
	}
	cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.TrailingLogs = opts.SnapshotThreshold, opts.SnapshotInterval, opts.TrailingLogs
	return cfg
}

// topology lists d's groups and their stores, in d's order.
func topology(d *placement.Deployment) storegroup.Topology {
	var t storegroup.Topology
	for _, g := range d.Groups {
		pg := storegroup.PeerGroup{Index: g.Index}
		for _, m := range d.Members(g.Index) {
			pg.Members = append(pg.Members, storegroup.Member{Name: m.Store.Name, RaftAddr: m.RaftAddr(), ClientAddr: m.ClientAddr()})
		}
		t = append(t, pg)
	}
	return t
}

// hostNames lists d's hosts for messages.
func hostNames(d *placement.Deployment) string {
	names := make([]string, len(d.Hosts))
	for i, h := range d.Hosts {
		names[i] = h.Name
	}
	return strings.Join(names, ", ")
}
