package clustertest

import (
	"umstore/storegroup"
)

// Move gives the named store new raft and client addresses (on 127.0.0.1,
// fresh ports), as if its host were replaced by a server at another
// address, and returns them. Like an operator's edited deployment file,
// the new addresses are in the configuration of the moved stores only
// (what StartStore and Config give them from now on, their new host's
// file): the other stores keep the configuration they were given, the
// surviving host's old file, even when they are restarted. Move the store
// while it is stopped.
func (c *Cluster) Move(name string) storegroup.Member {
	c.t.Helper()
	if s := c.Store(name); s != nil {
		c.t.Fatalf("move %s: the store is running", name)
	}
	var m storegroup.Member
	for _, ms := range c.members {
		for _, x := range ms {
			if x.Name == name {
				m = x
			}
		}
	}
	if m.Name == "" {
		c.t.Fatalf("move %s: no store of that name", name)
	}
	m.RaftAddr, m.ClientAddr = freeAddr(c.t), freeAddr(c.t)
	c.mu.Lock()
	if c.moved == nil {
		c.moved = map[string]storegroup.Member{}
	}
	c.moved[name] = m
	c.mu.Unlock()
	c.net.add(m)
	return m
}

// Moved returns the store's addresses where it listens now: the ones Move
// gave it, or its first ones.
func (c *Cluster) Moved(name string) storegroup.Member {
	c.mu.Lock()
	m, ok := c.moved[name]
	c.mu.Unlock()
	if ok {
		return m
	}
	for _, ms := range c.members {
		for _, x := range ms {
			if x.Name == name {
				return x
			}
		}
	}
	return storegroup.Member{}
}

// topology is the deployment as the named store's host sees it: with the
// moved stores' new addresses if it is one of them, else as first given.
func (c *Cluster) topology(name string) storegroup.Topology {
	c.mu.Lock()
	moved := c.moved
	_, edited := moved[name]
	c.mu.Unlock()
	var topo storegroup.Topology
	for g, ms := range c.members {
		pg := storegroup.PeerGroup{Index: g + 1}
		for _, m := range ms {
			if nm, ok := moved[m.Name]; ok && edited {
				m = nm
			}
			pg.Members = append(pg.Members, m)
		}
		topo = append(topo, pg)
	}
	return topo
}
