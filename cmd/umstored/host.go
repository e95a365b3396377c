package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"time"

	"umstore/dirlock"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
)

// hostStores are the running stores of one host of a deployment.
type hostStores struct {
	host   string
	stores []*storegroup.Store
	// admission lets one empty store per group catch up at a time: the
	// staged restart of SPEC §4 rule 4.
	admission *storegroup.HostAdmission
}

// startHost opens every store the deployment places on host, each in
// dataDir/<store name>. Stores decide by themselves whether to bootstrap,
// rejoin or refuse (see storegroup), so this only starts them, all at once:
// a standby store waits in Open for its data directory's lock, and one
// waiting store must not hold up the others. ctx ends such waits.
func startHost(ctx context.Context, d *placement.Deployment, host, dataDir string, opts storeOptions, log *slog.Logger) (*hostStores, error) {
	h, ok := d.HostByName(host)
	if !ok {
		return nil, fmt.Errorf("host %q is not in the deployment %q (its hosts: %s)", host, d.Name, hostNames(d))
	}
	refs := d.StoresOn(host)
	if len(refs) == 0 {
		return nil, fmt.Errorf("the deployment places no stores on host %q", host)
	}
	logRestartPlan(d, host, dataDir, log)
	sec, err := cli.StoreSecurity(d)
	if err != nil {
		return nil, err
	}
	hs := &hostStores{host: host, admission: storegroup.NewHostAdmission()}
	stores := make([]*storegroup.Store, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		cfg := storeConfig(d, ref, dataDir, net.ParseIP(h.Address), opts, log.With("host", host))
		cfg.Admission = hs.admission
		cfg.Security = sec
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = storegroup.OpenContext(ctx, cfg)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("start store %s: %w", ref.Store.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			hs.stores = append(hs.stores, s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		hs.stop()
		return nil, err
	}
	return hs, nil
}

// storeConfig is the configuration of one store of the deployment.
// storeOptions are the daemon's settings that apply to every store it runs.
type storeOptions struct {
	lock                 dirlock.Options
	retentionMaxBytes    uint64
	retentionMaxMessages uint64
	retentionMaxAge      time.Duration
	// sourceActivityTimeout: 0 keeps the store's default.
	sourceActivityTimeout time.Duration
	repairBytesPerSecond  int
	// snapshotThreshold, snapshotInterval and trailingLogs tune raft's log
	// compaction. Unlike the fields above, zero is not "the default": the
	// flags always set them (to storegroup's defaults unless given).
	snapshotThreshold uint64
	snapshotInterval  time.Duration
	trailingLogs      uint64
}

// addRetentionFlags declares the retention flags shared by run and dev.
func addRetentionFlags(fs *pflag.FlagSet, o *storeOptions) {
	def := storegroup.DefaultConfig()
	fs.Uint64Var(&o.retentionMaxBytes, "retention-max-bytes", def.RetentionMaxBytes, "per source: keep at most this many payload bytes, oldest released first (UM repository-disk-file-size-limit; 0: no limit)")
	fs.Uint64Var(&o.retentionMaxMessages, "retention-max-messages", def.RetentionMaxMessages, "per source: keep at most this many messages (0: no limit)")
	fs.DurationVar(&o.retentionMaxAge, "retention-max-age", def.RetentionMaxAge, "per source: release messages older than this (0: no limit)")
	fs.IntVar(&o.repairBytesPerSecond, "repair-rate", def.RepairBytesPerSecond, "intergroup repair copies at most this many payload bytes per second, so live publishing keeps priority")
	fs.DurationVar(&o.sourceActivityTimeout, "source-activity-timeout", def.SourceActivityTimeout, "free a source for a new publisher after its publisher has been silent this long (UM source-activity-timeout)")
}

// minSnapshotInterval is the shortest snapshot interval raft accepts
// (hashicorp/raft ValidateConfig).
const minSnapshotInterval = 5 * time.Millisecond

// addSnapshotFlags declares the log-compaction flags shared by run and dev.
func addSnapshotFlags(fs *pflag.FlagSet, o *storeOptions) {
	def := storegroup.DefaultConfig()
	fs.Uint64Var(&o.snapshotThreshold, "snapshot-threshold", def.SnapshotThreshold, "take a raft snapshot and compact the log once this many entries were written since the last snapshot (at least 1). A snapshot is only a reference to the repository file, so it is cheap; lower values keep raft.db small, and make a member that falls further behind than --trailing-logs (or lost its disk) receive a copy of the repository instead of the log")
	fs.DurationVar(&o.snapshotInterval, "snapshot-interval", def.SnapshotInterval, "how often raft checks --snapshot-threshold (each wait is drawn between this and twice this, so the stores of a group do not snapshot together; at least 5ms)")
	fs.Uint64Var(&o.trailingLogs, "trailing-logs", def.TrailingLogs, "log entries kept after a snapshot, so a member only slightly behind (a short crash, pause or partition) catches up from the log; a member further behind is sent a full copy of the repository (0: keep none)")
}

// validateSnapshots refuses log-compaction settings that raft would reject
// or that make no sense, naming the flag.
func (o *storeOptions) validateSnapshots() error {
	if o.snapshotThreshold < 1 {
		return errors.New("--snapshot-threshold must be at least 1: with 0 raft would try to snapshot at every check, even with nothing new to compact")
	}
	if o.snapshotInterval < minSnapshotInterval {
		return fmt.Errorf("--snapshot-interval %v is too short: raft needs at least %v (the default is %v)", o.snapshotInterval, minSnapshotInterval, storegroup.DefaultConfig().SnapshotInterval)
	}
	return nil
}

func storeConfig(d *placement.Deployment, ref placement.StoreRef, dataDir string, localIP net.IP, opts storeOptions, log *slog.Logger) storegroup.Config {
	lock := opts.lock
	cfg := storegroup.DefaultConfig()
	cfg.Name = ref.Store.Name
	cfg.Group = ref.Group
	for _, m := range d.Members(ref.Group) {
		cfg.Members = append(cfg.Members, storegroup.Member{Name: m.Store.Name, RaftAddr: m.RaftAddr(), ClientAddr: m.ClientAddr()})
	}
	for _, g := range d.Groups {
		if g.Index == ref.Group {
			continue
		}
		pg := storegroup.PeerGroup{Index: g.Index}
		for _, m := range d.Members(g.Index) {
			pg.Members = append(pg.Members, storegroup.Member{Name: m.Store.Name, RaftAddr: m.RaftAddr(), ClientAddr: m.ClientAddr()})
		}
		cfg.OtherGroups = append(cfg.OtherGroups, pg)
	}
	cfg.DataDir = filepath.Join(dataDir, ref.Store.Name)
	cfg.LocalIP = localIP
	cfg.Lock = lock
	cfg.RetentionMaxBytes, cfg.RetentionMaxMessages, cfg.RetentionMaxAge = opts.retentionMaxBytes, opts.retentionMaxMessages, opts.retentionMaxAge
	if opts.repairBytesPerSecond > 0 {
		cfg.RepairBytesPerSecond = opts.repairBytesPerSecond
	}
	if opts.sourceActivityTimeout > 0 {
		cfg.SourceActivityTimeout = opts.sourceActivityTimeout
	}
	cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.TrailingLogs = opts.snapshotThreshold, opts.snapshotInterval, opts.trailingLogs
	cfg.Logger = log
	return cfg
}

// logRestartPlan explains, when some of the host's stores are empty, the
// order in which they will start (SPEC §4 rule 4). The stores enforce the
// order themselves (admission, vote gate); this tells the operator what to
// expect. A wholly new deployment is bootstrapped, not restarted.
func logRestartPlan(d *placement.Deployment, host, dataDir string, log *slog.Logger) {
	hasState := map[string]bool{}
	empty := 0
	for _, ref := range d.StoresOn(host) {
		hasState[ref.Store.Name] = storegroup.DataDirHasState(filepath.Join(dataDir, ref.Store.Name))
		if !hasState[ref.Store.Name] {
			empty++
		}
	}
	if empty == 0 {
		return
	}
	if empty == len(hasState) {
		log.Info("every store of this host is empty: a new host, or one that lost its disk; new groups are bootstrapped once every store of the deployment answers, existing ones are rejoined one empty store per group at a time")
	}
	plan, err := placement.RestartPlan(d, host, hasState)
	if err != nil {
		log.Info("restart plan: assuming the other hosts' stores hold state would still leave a group without one; if the deployment is new this is expected", "detail", err.Error())
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(plan.Render()), "\n") {
		log.Info("restart plan: " + line)
	}
}

func hostNames(d *placement.Deployment) string {
	s := ""
	for i, h := range d.Hosts {
		if i > 0 {
			s += ", "
		}
		s += h.Name
	}
	return s
}

// stop closes every store, in parallel; each is marked stopped cleanly.
func (hs *hostStores) stop() {
	var wg sync.WaitGroup
	for _, s := range hs.stores {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Close() }()
	}
	wg.Wait()
}

// waitLeaders waits until every group with a store on these hosts knows a
// leader, reporting progress every few seconds. It gives up at ctx's end.
func waitLeaders(ctx context.Context, hosts []*hostStores, log *slog.Logger) error {
	last := time.Now()
	for {
		missing := map[int]bool{}
		for _, hs := range hosts {
			for _, s := range hs.stores {
				if s.Status().Leader == "" {
					missing[s.Group()] = true
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Since(last) > 3*time.Second {
			last = time.Now()
			log.Info("waiting for every group to elect a leader", "groups_without_leader", keys(missing))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}
