package clustertest

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"

	"umstore/storegroup"
)

// Partition cuts every link between two stores on different sides: their
// dials to each other are refused and the connections already open between
// them are closed. Stores named on no side keep every link. Cuts add up
// across calls; Heal removes them all. A side names stores ("G1S1"); the
// stores need not be running, and a cut outlives restarts.
//
// What is cut is what the stores dial through storegroup.Config.Dial:
// raft's traffic and the stores' client-protocol connections to each other
// (probes, intergroup repair). Connections of publishers, receivers and
// tests never are, so a test can still reach a store cut off from its
// group.
func (c *Cluster) Partition(sides ...[]string) {
	c.t.Helper()
	for _, side := range sides {
		for _, name := range side {
			if !c.net.known(name) {
				c.t.Fatalf("partition: no store named %s", name)
			}
		}
	}
	c.net.partition(sides)
}

// Isolate cuts every link between the named store and every other store of
// the cluster, of its group and of the others.
func (c *Cluster) Isolate(name string) {
	c.t.Helper()
	var rest []string
	for _, ms := range c.members {
		for _, m := range ms {
			if m.Name != name {
				rest = append(rest, m.Name)
			}
		}
	}
	c.Partition([]string{name}, rest)
}

// Heal restores every link that Partition or Isolate cut. Stores reconnect
// on their own (raft redials at its next heartbeat).
func (c *Cluster) Heal() { c.net.heal() }

// Cuts describes the links currently cut, as "G1S1-G1S2" sorted, for logs
// and failure messages.
func (c *Cluster) Cuts() []string { return c.net.cuts() }

// errCut is the error a dial across a cut link returns.
type errCut struct{ from, to string }

func (e errCut) Error() string {
	return fmt.Sprintf("clustertest: the link from %s to %s is cut by Partition", e.from, e.to)
}

// link is an unordered pair of store names, a < b.
type link struct{ a, b string }

func linkOf(x, y string) link {
	if x > y {
		x, y = y, x
	}
	return link{x, y}
}

// network carries the stores' outgoing raft connections: each store's
// storegroup.Config.Dial is one of its dialers. It knows which store listens
// on which address, refuses dials across a cut link, and tracks the
// connections it handed out so that a new cut closes them. Closing the
// dialing end is enough: the accepting store reads end-of-file and drops
// its end, so accepted connections need no hook.
type network struct {
	mu    sync.Mutex
	names map[string]string // raft or client address -> store name
	cut   map[link]bool
	conns map[*trackedConn]bool
}

func newNetwork() *network {
	return &network{names: map[string]string{}, cut: map[link]bool{}, conns: map[*trackedConn]bool{}}
}

// setMembers records the stores' addresses (again, after a restart of the
// cluster on fresh ports).
func (n *network) setMembers(members [][]storegroup.Member) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names = map[string]string{}
	for _, ms := range members {
		for _, m := range ms {
			n.names[m.RaftAddr] = m.Name
			n.names[m.ClientAddr] = m.Name
		}
	}
}

// add records a store's new addresses (clustertest.Move); the old ones
// still name it.
func (n *network) add(m storegroup.Member) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[m.RaftAddr] = m.Name
	n.names[m.ClientAddr] = m.Name
}

func (n *network) known(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, v := range n.names {
		if v == name {
			return true
		}
	}
	return false
}

// dialer returns the store's Config.Dial: a plain TCP dial, refused while
// the link to the store at the address is cut. Addresses of no store are
// never refused.
func (n *network) dialer(from string) storegroup.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		n.mu.Lock()
		to, ok := n.names[address]
		refused := ok && n.cut[linkOf(from, to)]
		n.mu.Unlock()
		if refused {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errCut{from, to}}
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		// A cut made while dialing must not let the connection through.
		if ok && n.cut[linkOf(from, to)] {
			nc.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Err: errCut{from, to}}
		}
		tc := &trackedConn{Conn: nc, n: n, link: linkOf(from, to)}
		n.conns[tc] = true
		return tc, nil
	}
}

// partition cuts the links between stores of different sides and closes
// the connections open across them.
func (n *network) partition(sides [][]string) {
	n.mu.Lock()
	for i := range sides {
		for j := i + 1; j < len(sides); j++ {
			for _, a := range sides[i] {
				for _, b := range sides[j] {
					if a != b {
						n.cut[linkOf(a, b)] = true
					}
				}
			}
		}
	}
	var doomed []net.Conn
	for tc := range n.conns {
		if n.cut[tc.link] {
			delete(n.conns, tc)
			doomed = append(doomed, tc.Conn)
		}
	}
	n.mu.Unlock()
	for _, nc := range doomed {
		nc.Close()
	}
}

func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[link]bool{}
}

func (n *network) cuts() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.cut))
	for l := range n.cut {
		out = append(out, l.a+"-"+l.b)
	}
	sort.Strings(out)
	return out
}

// trackedConn is a connection the network handed out; it forgets it when
// the store closes it.
type trackedConn struct {
	net.Conn
	n    *network
	link link
}

func (tc *trackedConn) Close() error {
	tc.n.mu.Lock()
	delete(tc.n.conns, tc)
	tc.n.mu.Unlock()
	return tc.Conn.Close()
}
