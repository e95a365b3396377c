package storehost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// Host is the running stores of one host of a deployment.
type Host struct {
	name string

	mu sync.Mutex // guards stores: a store started again replaces its predecessor
	// stores are the running stores, in the deployment's order.
	stores []*storegroup.Store
	// failed names the stores that could not start; the others run
	// without them.
	failed []string
	// startErr says why the failed stores could not start.
	startErr error
	// admission lets one empty store per group catch up at a time: the
	// staged restart of SPEC §4 rule 4.
	admission *storegroup.HostAdmission
	// restarts starts again stores that stopped on damaged files
	// (restart.go).
	restarts damageRestarts
}

// Start opens every store d places on host, each in dataDir/<store name>
// with base's settings ([Configs]), all at once: a standby store waits in Open for its data directory's lock,
// and one waiting store must not hold up the others. The stores decide by
// themselves whether to bootstrap, rejoin or refuse. ctx ends such waits
// (every store is stopped again and the error returned). A store that
// cannot start fails alone, as a store that stops itself while it runs
// does: it is logged, with its error, and the host's other stores serve
// (Serve then ends with ErrStoreStopped, so that a supervisor notices).
// Start fails when no store of the host could start.
func Start(ctx context.Context, d *placement.Deployment, host, dataDir string, base storegroup.Config, log *slog.Logger) (*Host, error) {
	cfgs, err := Configs(d, host, dataDir, base)
	if err != nil {
		return nil, err
	}
	warnWithoutMemberSecret(d, log)
	logRestartPlan(d, host, dataDir, log)
	h := &Host{name: host, admission: storegroup.NewHostAdmission()}
	stores := make([]*storegroup.Store, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		cfgs[i].Admission = h.admission
		cfgs[i].Logger = log.With("host", host)
	}
	h.restarts.init(cfgs)
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = storegroup.OpenContext(ctx, cfg)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("start store %s: %w", cfg.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			h.stores = append(h.stores, s)
		}
	}
	err = errors.Join(errs...)
	if err != nil && (ctx.Err() != nil || len(h.stores) == 0) {
		h.Stop()
		return nil, err
	}
	h.startErr = err
	for i, err := range errs {
		if err != nil {
			h.failed = append(h.failed, cfgs[i].Name)
			log.Error("a store could not start; the host's other stores serve without it. Fix what the error says and restart the daemon",
				"host", host, "store", cfgs[i].Name, "err", err)
		}
	}
	return h, nil
}

// Name is the host's name in the deployment.
func (h *Host) Name() string { return h.name }

// Stores are the host's running stores, in the deployment's order.
func (h *Host) Stores() []*storegroup.Store {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.stores)
}

// Failed names the host's stores that could not start.
func (h *Host) Failed() []string { return h.failed }

// StartErr says why the stores Failed names could not start (nil when every
// store started), for callers that do not read the host's log: a harness
// whose deployment is throwaway can start another instead.
func (h *Host) StartErr() error { return h.startErr }

// Stop closes every store, in parallel; each is marked stopped cleanly.
func (h *Host) Stop() {
	h.restarts.stop()
	var wg sync.WaitGroup
	for _, s := range h.Stores() {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Close() }()
	}
	wg.Wait()
}

// Hosts are the hosts one process runs: one for `umstored run`, every host
// of the loopback deployment for `umstored dev`.
type Hosts []*Host

// Names lists the hosts' names, sorted.
func (hs Hosts) Names() []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.name)
	}
	slices.Sort(out)
	return out
}

// Stores lists every store of the hosts.
func (hs Hosts) Stores() []*storegroup.Store {
	var out []*storegroup.Store
	for _, h := range hs {
		out = append(out, h.Stores()...)
	}
	return out
}

// Stop stops every host's stores, one host after the other.
func (hs Hosts) Stop() {
	for _, h := range hs {
		h.Stop()
	}
}

// WaitLeaders waits until every group with a store on these hosts knows a
// leader, logging progress every few seconds. It gives up at ctx's end.
func (hs Hosts) WaitLeaders(ctx context.Context, log *slog.Logger) error {
	last := time.Now()
	for {
		missing := map[int]bool{}
		for _, s := range hs.Stores() {
			if s.Status().Leader == "" {
				missing[s.Group()] = true
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

// ErrStoreStopped is returned by Serve when a store stopped itself, or
// could not start, while the others kept serving.
var ErrStoreStopped = errors.New("a store stopped itself")

// Serve serves until ctx ends (SIGINT, SIGTERM), then stops every store;
// or until every store has stopped, one at least by `umstored stop`. A
// store that stops itself (it could not apply an entry) is logged once and
// the host's other stores keep serving their groups (when every store
// stopped itself, the process stays, for its status); one that stopped on damage it marked in
// its files is started again, a bounded number of times, which moves the
// files to a backup and rejoins its group empty (damage_restart.go). Serve
// returns an error wrapping ErrStoreStopped when a store is still stopped
// at the end, so that a supervisor notices. So does a store that could not
// start.
func (hs Hosts) Serve(ctx context.Context, log *slog.Logger) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	logged := map[*storegroup.Store]bool{}
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping stores")
			hs.Stop()
			log.Info("stores stopped")
			return hs.stoppedErr()
		case <-tick.C:
			if hs.allStopped() && !hs.restarting() {
				log.Info("every store has stopped (umstored stop); exiting")
				hs.Stop()
				return hs.stoppedErr()
			}
			for _, s := range hs.Stores() {
				if err := s.Err(); err != nil && !logged[s] {
					logged[s] = true
					log.Error("a store stopped itself; the others keep serving", "store", s.Name(), "err", err)
				}
			}
			for _, h := range hs {
				h.restartDamaged(log)
			}
		}
	}
}

// stoppedErr names the stores that could not start or stopped themselves
// (and were not started again), wrapped in ErrStoreStopped; nil if none.
func (hs Hosts) stoppedErr() error {
	var stores []string
	for _, h := range hs {
		stores = append(stores, h.failed...)
		for _, s := range h.Stores() {
			if s.Err() != nil {
				stores = append(stores, s.Name())
			}
		}
	}
	if len(stores) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v (see the log)", ErrStoreStopped, stores)
}

// restarting reports whether a store of the hosts is being started again.
func (hs Hosts) restarting() bool {
	for _, h := range hs {
		h.restarts.mu.Lock()
		for _, on := range h.restarts.running {
			if on {
				h.restarts.mu.Unlock()
				return true
			}
		}
		h.restarts.mu.Unlock()
	}
	return false
}

// allStopped reports whether every store of the hosts has stopped and one
// at least was stopped (`umstored stop`) rather than stopping itself. A
// host whose stores all stopped themselves (a full disk takes every store
// of a host at once) keeps its process, as for one store: its status page
// says why, and its exit would have a supervisor restart it into the same
// fault (docs/operations.md, "A failed store").
func (hs Hosts) allStopped() bool {
	asked := false
	for _, s := range hs.Stores() {
		select {
		case <-s.Done():
			asked = asked || s.Err() == nil
		default:
			return false
		}
	}
	return asked
}
