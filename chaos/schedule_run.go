package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// scheduleRun is one schedule under way: what it drew from the run's seed,
// the deployment it runs on, and the clients and nemesis it runs against
// that deployment. runSchedule drives it through its phases in order.
type scheduleRun struct {
	env   *runEnv
	opts  options
	index int
	rng   *rand.Rand
	log   *slog.Logger
	hist  *History

	// What the schedule drew: its sources, faults, snapshot settings,
	// paced source and lifetime limits.
	sources []string
	plan    []Fault
	snaps   *SnapshotSettings
	rpp     *RPPSettings
	limits  *LifetimeLimits

	dir  string   // the schedule's directory
	c    *cluster // nil until deploy succeeds
	pubs map[string]*pubProc
	rcvs map[string]*rcvProc
	nem  *nemesis

	// Background work (monitor, followers) runs under watchCtx and ends
	// with watchCancel; bg waits for it.
	watchCtx    context.Context
	watchCancel context.CancelFunc
	bg          sync.WaitGroup
}

// newScheduleRun draws schedule index of the run from its seed (the
// faults first, from the schedule's random source; the base port is drawn
// from it later, by deploy) and opens its history.
func newScheduleRun(env *runEnv, index int) *scheduleRun {
	opts := env.opts
	r := &scheduleRun{env: env, opts: opts, index: index, rng: scheduleRand(opts.Seed, index)}
	r.sources = sourceNames(opts.Sources)
	r.plan = planSchedule(r.rng, opts.planConfig(r.sources))
	if !opts.DefaultSnapshots {
		r.snaps = pickSnapshotSettings(opts.Seed, index)
	}
	r.log = env.log.With("schedule", index)
	r.hist = NewHistory(index, opts.Seed, r.sources)
	r.hist.Plan = r.plan
	r.hist.Snapshots = r.snaps
	r.limits = lifetimeLimits(opts)
	r.hist.Lifetimes = r.limits
	r.hist.RetentionReleases = retentionCanRelease(opts, r.snaps, r.limits)
	r.rpp = pickRPP(r.sources, opts.PacedSource)
	r.hist.RPP = r.rpp
	return r
}

// logPlan logs what the schedule drew and where it runs.
func (r *scheduleRun) logPlan() {
	var planText []string
	for _, f := range r.plan {
		planText = append(planText, f.String())
	}
	r.log.Info("schedule planned", "seed", r.opts.Seed, "faults", strings.Join(planText, "; "), "snapshots", r.snaps.String(), "rpp", r.rpp.String(), "limits", r.limits.String(), "lock", r.opts.Lock, "dir", r.dir)
}

// deploy plans the schedule's deployment on free ports and hooks its
// hosts' starts and exits into the history. The hosts are not started.
func (r *scheduleRun) deploy(ctx context.Context) error {
	base, err := freeBasePort(r.rng.IntN(1000) + r.index*3)
	if err != nil {
		return err
	}
	previous := ""
	if upgrades(r.plan) {
		previous = r.opts.PreviousBin
	}
	c, err := newCluster(ctx, r.dir, r.env.bin, previous, base, r.opts.SlowDisks, slices.Concat(r.snaps.args(), r.rpp.args(), r.limits.args(), lockArgs(r.opts.Lock)), r.log)
	if err != nil {
		return err
	}
	r.c = c
	hist := r.hist
	hist.SetLayout(c.layout())
	for _, h := range c.hosts {
		h.onExit = func(inc int, err error) { hist.DaemonExited(h.name, inc, err) }
		h.onEnd = func(inc int, at time.Time) { hist.HostEnded(h.name, inc, at) }
		h.onStart = func(inc int, addr, deploy string) {
			run := HostRun{Host: h.name, Incarnation: inc, Addr: addr, File: filepath.Base(deploy), At: time.Now(), Previous: previous != "" && h.bin == previous}
			if f := c.file(deploy); f != nil {
				run.FileAddrs = f.Addrs
			}
			hist.HostStarted(run)
		}
	}
	return nil
}

// prepareClients sets up, without starting them, a publisher child and a
// durable receiver child for each source, and the nemesis that injects
// the planned faults.
func (r *scheduleRun) prepareClients() {
	r.pubs = map[string]*pubProc{}
	for _, s := range r.sources {
		r.pubs[s] = &pubProc{
			exe: r.env.exe, hist: r.hist, log: r.log,
			logPath: filepath.Join(r.dir, "publisher-"+s+".log"),
			base: childConfig{Source: s, Deployment: r.c.deploy, Rate: r.opts.Rate, Count: r.opts.Messages,
				Size: payloadSize, RegisterFor: 90 * time.Second},
		}
		if r.opts.PublisherState {
			r.pubs[s].base.StateFile = filepath.Join(r.dir, "publisher-"+s+".state")
		}
		if r.rpp.paced(s) {
			r.pubs[s].base.Paced = r.rpp.Mode
		}
	}
	r.rcvs = map[string]*rcvProc{}
	for _, s := range r.sources {
		r.rcvs[s] = &rcvProc{
			exe: r.env.exe, hist: r.hist, log: r.log,
			logPath: filepath.Join(r.dir, "receiver-"+s+".log"),
			base:    receiverChildConfig{Source: s, Deployment: r.c.deploy, Name: durableName(s), Paced: r.rpp.paced(s)},
		}
	}
	r.nem = &nemesis{c: r.c, pubs: r.pubs, rcvs: r.rcvs, followers: map[string]*follower{}, part: r.env.part, hist: r.hist, log: r.log, exe: r.env.exe, dir: r.dir}
}

// stopAll stops every process of the schedule: the clients (kill -9), the
// background work, the partition (healed), the hosts. It may run more
// than once.
func (r *scheduleRun) stopAll() {
	for _, p := range r.pubs {
		p.kill9()
	}
	for _, rc := range r.rcvs {
		rc.kill9()
	}
	r.watchCancel()
	r.bg.Wait()
	if r.env.part != nil {
		if err := r.env.part.heal(); err != nil {
			r.hist.Problemf("harness", "heal the link: %v", err)
		}
	}
	for _, h := range r.c.hosts {
		h.stop()
	}
}

// run is the schedule's body, bounded by ctx: the deployment comes up,
// the clients start and publish, then the planned faults are injected. It
// stops at the first problem, which it records in the history.
func (r *scheduleRun) run(ctx, parent context.Context) {
	if !r.startDeployment(ctx) || !r.startClients() || !r.waitPublishing(ctx) {
		return
	}
	r.waitSnapshots(ctx)
	r.injectFaults(ctx, parent)
}

// startDeployment starts both hosts, waits until the deployment is whole
// and starts the monitor. It reports whether all went well.
func (r *scheduleRun) startDeployment(ctx context.Context) bool {
	for _, h := range r.c.hosts {
		if err := h.start("first start"); err != nil {
			r.hist.Problemf("harness", "%v", err)
			return false
		}
	}
	if err := r.c.waitRestored(ctx, r.opts.RestoreTimeout); err != nil {
		r.hist.Problemf("not-restored", "the new deployment did not come up: %v", err)
		return false
	}
	r.bg.Add(1)
	go func() { defer r.bg.Done(); r.c.monitor(r.watchCtx, r.hist) }()
	return true
}

// startClients starts, for each source, a follower, the durable receiver
// and the publisher, in the order that source needs. It reports whether
// all went well.
func (r *scheduleRun) startClients() bool {
	hist := r.hist
	for _, s := range r.sources {
		fl := &follower{source: s, hist: hist, log: quietLogger(r.log), parent: r.watchCtx, wg: &r.bg}
		r.nem.followers[s] = fl
		fl.start(r.c.deploy, r.c.groups)
		if r.rpp.paced(s) {
			// A group records a receiver's registration only once it
			// holds the source: the paced source's publisher registers
			// first, then its durable receiver, so that the receiver's
			// hold is on record before retention could release
			// anything.
			if err := r.pubs[s].start(); err != nil {
				hist.Problemf("harness", "%v", err)
				return false
			}
			if err := r.pubs[s].waitRegistered(60 * time.Second); err != nil {
				hist.Problemf("publisher", "%v", err)
				return false
			}
			if err := r.rcvs[s].start(false); err != nil {
				hist.Problemf("harness", "%v", err)
				return false
			}
			if err := r.rcvs[s].waitRegistered(30 * time.Second); err != nil {
				hist.Problemf("receiver", "%v", err)
				return false
			}
			continue
		}
		if err := r.rcvs[s].start(false); err != nil {
			hist.Problemf("harness", "%v", err)
			return false
		}
		if err := r.pubs[s].start(); err != nil {
			hist.Problemf("harness", "%v", err)
			return false
		}
	}
	return true
}

// waitPublishing waits until every source has something acknowledged, so
// that publishing is under way before the first fault. It reports whether
// every source got there within 30 s.
func (r *scheduleRun) waitPublishing(ctx context.Context) bool {
	for _, s := range r.sources {
		deadline := time.Now().Add(30 * time.Second)
		for r.hist.MaxAcked(s) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
			_ = sleepCtx(ctx, 100*time.Millisecond)
		}
		if r.hist.MaxAcked(s) == 0 {
			r.hist.Problemf("publisher", "source %s had nothing acknowledged 30s after it started", s)
			return false
		}
	}
	return true
}

// waitSnapshots, with small snapshot settings, waits until every store has
// compacted its log before the first fault, so that a wipe, even the
// first fault, ends in snapshot installs.
func (r *scheduleRun) waitSnapshots(ctx context.Context) {
	if r.snaps == nil {
		return
	}
	t0 := time.Now()
	if missing := r.c.waitSnapshotted(ctx, 30*time.Second); len(missing) > 0 {
		r.log.Warn("not every store took a snapshot before the first fault; a wipe may catch up from the log", "without_snapshot", strings.Join(missing, ","))
	} else {
		r.log.Info("every store took a snapshot", "took", time.Since(t0).Round(100*time.Millisecond))
	}
}

// injectFaults injects the planned faults in order, waiting after a host
// fault until the deployment is whole again, and keeping each fault's
// quiet time after it. It stops at the first problem.
func (r *scheduleRun) injectFaults(ctx, parent context.Context) {
	for i, f := range r.plan {
		if ctx.Err() != nil {
			r.hist.Problemf("timeout", "the schedule ran out of time before fault %d: %v", i+1, ctx.Err())
			return
		}
		rec, err := r.nem.inject(ctx, f)
		if err != nil {
			r.hist.Problemf("harness", "fault %d (%s): %v", i+1, f, err)
			return
		}
		if f.hostFault() {
			t0 := time.Now()
			if err := r.c.waitRestored(ctx, r.opts.RestoreTimeout); err != nil {
				r.hist.Problemf("not-restored", "after fault %d (%s): %v%s", i+1, f, err, stacksNote(r.c.dumpStacks(parent, fmt.Sprintf("fault-%d", i+1))))
				return
			}
			r.hist.FaultRestored(rec, time.Now())
			r.log.Info("restored", "after", f.String(), "took", time.Since(t0).Round(100*time.Millisecond))
		}
		_ = sleepCtx(ctx, f.Quiet)
	}
}

// healAndRestore begins the final phase: every fault still in place is
// healed, and the deployment must be whole again.
func (r *scheduleRun) healAndRestore(ctx, parent context.Context) {
	if err := r.nem.healAll(); err != nil {
		r.hist.Problemf("harness", "heal: %v", err)
	}
	if err := r.c.waitRestored(ctx, r.opts.RestoreTimeout); err != nil {
		r.hist.Problemf("not-restored", "after the final heal: %v%s", err, stacksNote(r.c.dumpStacks(parent, "final")))
	}
}

// finishPublishers lets every publisher finish, all at once: register if a
// restarted one has not yet (the stores free a killed publisher's source
// after source-activity-timeout), stop sending, flush, exit.
func (r *scheduleRun) finishPublishers() {
	var pw sync.WaitGroup
	for _, p := range r.pubs {
		pw.Add(1)
		go func() {
			defer pw.Done()
			if err := p.waitRegistered(75 * time.Second); err != nil {
				r.hist.Problemf("publisher", "%v", err)
			}
			// A paced publisher held back at the retention limit flushes
			// only once its receiver (restarted with a new session, some
			// 30 s after the kill) consumes again.
			if r.rpp.paced(p.base.Source) {
				if err := r.rcvs[p.base.Source].waitRegistered(75 * time.Second); err != nil {
					r.hist.Problemf("receiver", "%v", err)
				}
			}
			r.hist.Stopping(p.base.Source)
			p.stop(45 * time.Second)
		}()
	}
	pw.Wait()
}

// finishReceivers waits for the followers to catch up, then for the
// durable receivers (one restarted with a new session registers only once
// the stores expired the killed one's, after receiver-activity-timeout),
// which then close, recording their positions: the status sample after
// the final reads shows them. The background work ends with it.
func (r *scheduleRun) finishReceivers(ctx context.Context) {
	for _, s := range r.sources {
		if err := waitFollower(ctx, r.hist, s, 30*time.Second); err != nil {
			r.hist.Problemf("receiver", "%v", err)
		}
	}
	var rw sync.WaitGroup
	for _, rc := range r.rcvs {
		rw.Add(1)
		go func() {
			defer rw.Done()
			if err := rc.waitCaughtUp(75 * time.Second); err != nil {
				r.hist.Problemf("receiver", "%v", err)
			}
			rc.stop(20 * time.Second)
		}()
	}
	rw.Wait()
	r.watchCancel()
	r.bg.Wait()
}

// readBack reads every source back to the end. The final read is a new
// client: it is given the newest deployment file, which places every host
// where it is.
func (r *scheduleRun) readBack(ctx context.Context) {
	for _, s := range r.sources {
		r.hist.SetFinal(s, finalRead(ctx, r.c.latestFile().Groups, s, r.hist.MaxAcked(s), quietLogger(r.log)))
	}
}

// scanHostLogs reads both hosts' logs, once the deployment has stopped,
// into the history: bootstraps, catch-ups, snapshots, retention, sessions,
// backups; and the publishers' logs: the ranges they declared never
// published.
func (r *scheduleRun) scanHostLogs() {
	for _, h := range r.c.hosts {
		scan, err := scanHostLogFile(h.name, h.logPath)
		if err != nil {
			r.hist.Problemf("harness", "%v", err)
			continue
		}
		r.hist.AddBootstraps(scan.Bootstraps)
		for _, o := range scan.Overlaps {
			r.hist.ObserveCatchUp(o)
		}
		r.hist.AddSnapshotLog(scan.Snapshots)
		r.hist.AddRetentionLog(scan.Retention)
		r.hist.AddSessionLog(scan)
		r.hist.AddBackups(scan.Backups)
	}
	for _, s := range r.sources {
		u, err := scanPublisherLogFile(s, filepath.Join(r.dir, "publisher-"+s+".log"))
		if err != nil {
			r.hist.Problemf("harness", "%v", err)
			continue
		}
		r.hist.AddUnpublished(u)
	}
}
