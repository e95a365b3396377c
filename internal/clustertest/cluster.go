// Package clustertest runs real store groups inside a test process: real
// raft over TCP on loopback, real bbolt files in the test's temporary
// directory. Tests of the SDKs and of the stores drive it.
package clustertest

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/storegroup"
)

// Cluster is a set of store groups of three stores each.
type Cluster struct {
	t       testing.TB
	dir     string
	members [][]storegroup.Member // per group, in deployment order
	tune    func(*storegroup.Config)
	logs    *testWriter

	// Admission is shared by every store, as if all ran on one host.
	Admission *storegroup.HostAdmission

	mu     sync.Mutex
	stores map[string]*storegroup.Store
}

// Start starts `groups` groups of three stores on 127.0.0.1 and waits until
// every group has a leader. tune, if not nil, adjusts each store's config.
// Everything stops when the test ends.
func Start(t testing.TB, groups int, tune func(*storegroup.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir(), tune: tune, stores: map[string]*storegroup.Store{}, Admission: storegroup.NewHostAdmission()}
	c.logs = &testWriter{t: t}
	t.Cleanup(func() { c.logs.done.Store(true) }) // runs last: stray logs after the test are dropped
	t.Cleanup(c.Close)
	// A port found free can be taken by another test process before the
	// store binds it: start again on fresh ports a few times.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		c.pickAddrs(groups)
		if err = c.startAll(); err == nil {
			break
		}
		c.Close()
		for _, ms := range c.members {
			for _, m := range ms {
				os.RemoveAll(c.DataDir(m.Name))
			}
		}
	}
	if err != nil {
		t.Fatalf("start the cluster: %v", err)
	}
	for g := 1; g <= groups; g++ {
		c.WaitLeader(g, 30*time.Second)
	}
	return c
}

func (c *Cluster) pickAddrs(groups int) {
	c.members = nil
	for g := 1; g <= groups; g++ {
		var ms []storegroup.Member
		for s := 1; s <= 3; s++ {
			ms = append(ms, storegroup.Member{
				Name:       fmt.Sprintf("G%dS%d", g, s),
				RaftAddr:   freeAddr(c.t),
				ClientAddr: freeAddr(c.t),
			})
		}
		c.members = append(c.members, ms)
	}
}

func (c *Cluster) startAll() error {
	for g := range c.members {
		for _, m := range c.members[g] {
			s, err := storegroup.Open(c.Config(m.Name))
			if err != nil {
				return fmt.Errorf("start store %s: %w", m.Name, err)
			}
			c.mu.Lock()
			c.stores[m.Name] = s
			c.mu.Unlock()
		}
	}
	return nil
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Config returns the configuration of the named store.
func (c *Cluster) Config(name string) storegroup.Config {
	for g, ms := range c.members {
		for _, m := range ms {
			if m.Name != name {
				continue
			}
			cfg := storegroup.DefaultConfig()
			cfg.Name = name
			cfg.Group = g + 1
			cfg.Members = ms
			for og, oms := range c.members {
				if og != g {
					cfg.OtherGroups = append(cfg.OtherGroups, storegroup.PeerGroup{Index: og + 1, Members: oms})
				}
			}
			cfg.Admission = c.Admission
			cfg.DataDir = filepath.Join(c.dir, name)
			cfg.HeartbeatTimeout = 500 * time.Millisecond
			cfg.ElectionTimeout = 500 * time.Millisecond
			cfg.LeaderLeaseTimeout = 250 * time.Millisecond
			cfg.ProbeInterval = 100 * time.Millisecond
			cfg.Logger = slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelWarn})).With("store", name)
			if c.tune != nil {
				c.tune(&cfg)
			}
			return cfg
		}
	}
	c.t.Fatalf("no store named %s", name)
	return storegroup.Config{}
}

// StartStore (re)starts a stopped store with its data directory.
func (c *Cluster) StartStore(name string) *storegroup.Store {
	c.t.Helper()
	s, err := storegroup.Open(c.Config(name))
	if err != nil {
		c.t.Fatalf("start store %s: %v", name, err)
	}
	c.mu.Lock()
	c.stores[name] = s
	c.mu.Unlock()
	return s
}

// Store returns the running store of that name, or nil.
func (c *Cluster) Store(name string) *storegroup.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stores[name]
}

// Kill stops a store abruptly (no leadership transfer).
func (c *Cluster) Kill(name string) {
	c.mu.Lock()
	s := c.stores[name]
	delete(c.stores, name)
	c.mu.Unlock()
	if s != nil {
		_ = s.Abort()
	}
}

// Stop stops a store gracefully.
func (c *Cluster) Stop(name string) {
	c.mu.Lock()
	s := c.stores[name]
	delete(c.stores, name)
	c.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}

// Wipe deletes a stopped store's data directory, as a host that comes back
// without its disk.
func (c *Cluster) Wipe(name string) {
	c.t.Helper()
	if s := c.Store(name); s != nil {
		c.t.Fatalf("wipe %s: the store is running", name)
	}
	if err := os.RemoveAll(c.DataDir(name)); err != nil {
		c.t.Fatal(err)
	}
}

// DataDir returns a store's data directory.
func (c *Cluster) DataDir(name string) string { return filepath.Join(c.dir, name) }

// Members returns the members of a group (1-based).
func (c *Cluster) Members(group int) []storegroup.Member { return c.members[group-1] }

// Addrs returns the client addresses of every group, as SDK configs take them.
func (c *Cluster) Addrs() [][]string {
	out := make([][]string, len(c.members))
	for g, ms := range c.members {
		for _, m := range ms {
			out[g] = append(out[g], m.ClientAddr)
		}
	}
	return out
}

// Leader returns the ready leader of a group, or nil.
func (c *Cluster) Leader(group int) *storegroup.Store {
	for _, m := range c.members[group-1] {
		if s := c.Store(m.Name); s != nil && s.IsLeader() {
			return s
		}
	}
	return nil
}

// WaitLeader waits until the group has a ready leader.
func (c *Cluster) WaitLeader(group int, timeout time.Duration) *storegroup.Store {
	c.t.Helper()
	var l *storegroup.Store
	c.Eventually(timeout, fmt.Sprintf("group %d elects a leader", group), func() bool {
		l = c.Leader(group)
		return l != nil
	})
	return l
}

// GroupID waits for the group's leader to have recorded the group's
// identity, which a new leader proposes right after its election, and
// returns it.
func (c *Cluster) GroupID(group int, timeout time.Duration) string {
	c.t.Helper()
	var id string
	c.Eventually(timeout, fmt.Sprintf("group %d has an identity", group), func() bool {
		if l := c.Leader(group); l != nil {
			id = l.Repository().GroupID()
		}
		return id != ""
	})
	return id
}

// Eventually polls cond until it holds or the timeout passes.
func (c *Cluster) Eventually(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops every store.
func (c *Cluster) Close() {
	c.mu.Lock()
	stores := c.stores
	c.stores = map[string]*storegroup.Store{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Abort() }()
	}
	wg.Wait()
}

// testWriter sends logs to t.Log.
type testWriter struct {
	t    testing.TB
	done atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}
