package storehost

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/quorum"
	"umstore/storegroup"
)

// Configs returns the configuration of every store d places on host, in
// d's order: base (the settings every store of the host shares, the
// policy's included: see [BaseConfig]) with each store's name and group,
// its group's members and every other group (names, raft and client
// addresses), its group's preferred host, its data directory
// dataDir/<store name>, the host's address as the address its connections
// leave from (a name resolved to one address of this machine, see
// localAddress), the transport security of d's security section and d's
// intragroup stability. Logger and Admission are left for the caller:
// Start shares one admission among the host's stores.
func Configs(d *placement.Deployment, host, dataDir string, base storegroup.Config) ([]storegroup.Config, error) {
	h, ok := d.HostByName(host)
	if !ok {
		return nil, fmt.Errorf("host %q is not in the deployment %q (its hosts: %s)", host, d.Name, hostNames(d))
	}
	refs := d.StoresOn(host)
	if len(refs) == 0 {
		return nil, fmt.Errorf("the deployment places no stores on host %q", host)
	}
	local, err := localAddress(context.Background(), h)
	if err != nil {
		return nil, err
	}
	sec, err := cli.StoreSecurity(d)
	if err != nil {
		return nil, err
	}
	if sec.OperatorToken, err = cli.OperatorToken(d, ""); err != nil {
		return nil, err
	}
	cfgs := make([]storegroup.Config, len(refs))
	for i, ref := range refs {
		cfgs[i] = storeConfig(d, ref, dataDir, sec, base)
		cfgs[i].LocalIP = net.IP(local.AsSlice())
	}
	return cfgs, nil
}

// storeConfig is the configuration of one store of d: base with the
// store's place in d.
func storeConfig(d *placement.Deployment, ref placement.StoreRef, dataDir string, sec storegroup.Security, base storegroup.Config) storegroup.Config {
	cfg := base
	topology(d).Place(&cfg, ref.Store.Name)
	cfg.DataDir = filepath.Join(dataDir, ref.Store.Name)
	// LocalIP is set by Configs, which resolves the host's address.
	cfg.Security = sec
	cfg.PreferredHost, cfg.PreferredMembers = "", nil
	if g, ok := d.GroupByIndex(ref.Group); ok {
		if h := g.Preferred(); h != "" {
			cfg.PreferredHost = h
			for _, s := range g.Stores {
				if s.Host == h {
					cfg.PreferredMembers = append(cfg.PreferredMembers, s.Name)
				}
			}
		}
	}
	// A valid deployment names a known behaviour; an unset one is quorum.
	cfg.Intragroup, _ = quorum.ParseIntragroupBehavior(d.Stability.WithDefaults().Intragroup)
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
