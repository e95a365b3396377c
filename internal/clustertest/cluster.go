package clustertest

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/testports"
	"umstore/storegroup"
)

// Options configures a test cluster; New fills in the defaults of fields
// left zero. hashicorp/raft's MakeClusterOpts is the model.
type Options struct {
	// Groups is how many store groups to start (default 1).
	Groups int
	// StoresPerGroup is how many stores each group has: odd and at least 3
	// (default 3). Store s of group g is named "GgSs".
	StoresPerGroup int
	// Tune, if set, adjusts each store's configuration after the harness
	// has filled it in (it runs again at every StartStore).
	Tune func(*storegroup.Config)
	// Logger, if set, receives every store's logs (each with a "store"
	// attribute) instead of t.Log.
	Logger *slog.Logger
	// LogLevel is the lowest level of store log sent to t.Log (default
	// slog.LevelWarn). Ignored when Logger is set.
	LogLevel slog.Leveler
	// LeaderTimeout bounds how long New waits for each group's first leader
	// (default 30s).
	LeaderTimeout time.Duration
	// NoWaitLeader makes New return as soon as every store is open, without
	// waiting for leaders.
	NoWaitLeader bool
}

// withDefaults returns o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.Groups == 0 {
		o.Groups = 1
	}
	if o.StoresPerGroup == 0 {
		o.StoresPerGroup = 3
	}
	if o.LogLevel == nil {
		o.LogLevel = slog.LevelWarn
		if lvl, ok := envLogLevel(); ok {
			o.LogLevel = lvl
		}
	}
	if o.LeaderTimeout == 0 {
		o.LeaderTimeout = 30 * time.Second
	}
	return o
}

// Cluster is a set of store groups running in the test process.
type Cluster struct {
	t       testing.TB
	opts    Options
	dir     string
	members [][]storegroup.Member // per group, in deployment order
	logs    *testWriter
	net     *network

	// Admission is shared by every store, as if all ran on one host.
	Admission *storegroup.HostAdmission

	mu     sync.Mutex
	stores map[string]*storegroup.Store
	// moved holds the new addresses of the stores Move gave new ones
	// (move.go).
	moved map[string]storegroup.Member
}

// Start starts `groups` groups of three stores on 127.0.0.1 and waits until
// every group has a leader. tune, if not nil, adjusts each store's config.
// Everything stops when the test ends. It is New with the default Options.
func Start(t testing.TB, groups int, tune func(*storegroup.Config)) *Cluster {
	t.Helper()
	return New(t, Options{Groups: groups, Tune: tune})
}

// New starts the cluster that opts describe on 127.0.0.1 and, unless
// opts.NoWaitLeader, waits until every group has a leader. Everything stops
// when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	opts = opts.withDefaults()
	if opts.Groups < 1 || opts.StoresPerGroup < 3 || opts.StoresPerGroup%2 == 0 {
		t.Fatalf("clustertest: %d groups of %d stores: want at least 1 group of an odd number (3 or more) of stores", opts.Groups, opts.StoresPerGroup)
	}
	c := &Cluster{t: t, opts: opts, dir: t.TempDir(), stores: map[string]*storegroup.Store{}, Admission: storegroup.NewHostAdmission(), net: newNetwork()}
	c.logs = &testWriter{t: t}
	t.Cleanup(func() { c.logs.done.Store(true) }) // runs last: stray logs after the test are dropped
	t.Cleanup(c.Close)
	// A port found free can be taken by another test process before the
	// store binds it: start again on fresh ports a few times.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		c.pickAddrs()
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
	if !opts.NoWaitLeader {
		for g := 1; g <= opts.Groups; g++ {
			c.WaitLeader(g, opts.LeaderTimeout)
		}
	}
	return c
}

func (c *Cluster) pickAddrs() {
	c.members = nil
	for g := 1; g <= c.opts.Groups; g++ {
		var ms []storegroup.Member
		for s := 1; s <= c.opts.StoresPerGroup; s++ {
			ms = append(ms, storegroup.Member{
				Name:       fmt.Sprintf("G%dS%d", g, s),
				RaftAddr:   freeAddr(c.t),
				ClientAddr: freeAddr(c.t),
			})
		}
		c.members = append(c.members, ms)
	}
	c.net.setMembers(c.members)
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

// freeAddr returns a loopback address with a port no other test binary
// is given (see internal/testports).
func freeAddr(t testing.TB) string {
	t.Helper()
	return testports.Addr(t)
}

// Config returns the configuration of the named store: the harness's fast
// timeouts, raft's connections carried by the cluster's network (so that
// Partition can cut them), then Options.Tune.
func (c *Cluster) Config(name string) storegroup.Config {
	topo := c.topology(name)
	cfg := storegroup.DefaultConfig()
	if !topo.Place(&cfg, name) {
		c.t.Fatalf("no store named %s", name)
	}
	cfg.Admission = c.Admission
	cfg.DataDir = filepath.Join(c.dir, name)
	cfg.HeartbeatTimeout = 500 * time.Millisecond
	cfg.ElectionTimeout = 500 * time.Millisecond
	cfg.LeaderLeaseTimeout = 250 * time.Millisecond
	cfg.ProbeInterval = 100 * time.Millisecond
	cfg.Logger = c.logger().With("store", name)
	cfg.Dial = c.net.dialer(name)
	if c.opts.Tune != nil {
		c.opts.Tune(&cfg)
	}
	return cfg
}

// PatientRaft is a Tune for tests that push payloads of many MiB through
// raft: with the harness's fast timeouts, encoding, writing and sending
// such entries (slower still under the race detector) can hold a leader's
// heartbeats long enough for its followers to elect another, and the test
// then measures elections instead of what it is about.
func PatientRaft(cfg *storegroup.Config) {
	cfg.HeartbeatTimeout = 3 * time.Second
	cfg.ElectionTimeout = 3 * time.Second
	cfg.LeaderLeaseTimeout = 1500 * time.Millisecond
}

func (c *Cluster) logger() *slog.Logger {
	if c.opts.Logger != nil {
		return c.opts.Logger
	}
	return slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: c.opts.LogLevel}))
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

// Addrs returns the client addresses of every group, as SDK configs take
// them: where each store listens now (Move).
func (c *Cluster) Addrs() [][]string {
	out := make([][]string, len(c.members))
	for g, ms := range c.members {
		for _, m := range ms {
			out[g] = append(out[g], c.Moved(m.Name).ClientAddr)
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

// envLogLevel reads UMSTORE_TEST_LOG (debug, info, warn, error): the
// level a test's stores log at when the test does not choose one, to
// read a rare failure in full without editing the test.
func envLogLevel() (slog.Level, bool) {
	v := os.Getenv("UMSTORE_TEST_LOG")
	if v == "" {
		return 0, false
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(v)); err != nil {
		return 0, false
	}
	return lvl, true
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
