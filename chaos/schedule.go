package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"umstore/storegroup"
)

// runEnv is what every schedule of one run shares.
type runEnv struct {
	opts    options
	bin     string // directory holding umstored
	exe     string // executable that runs a publisher child (this program)
	workDir string
	part    *partitioner // nil when partitions are off
	log     *slog.Logger
}

// scheduleResult is the outcome of one schedule.
type scheduleResult struct {
	Index    int            `json:"index"`
	Plan     []Fault        `json:"plan"`
	Faults   int            `json:"faults"`
	Kinds    map[string]int `json:"fault_kinds"`
	Result                  // the checker's verdict
	Duration time.Duration  `json:"duration"`
	Dir      string         `json:"dir,omitempty"`
	Kept     bool           `json:"kept"`
	// Interrupted is set when the run was stopped during the schedule; its
	// checks are then not counted.
	Interrupted bool `json:"interrupted"`
	// Snapshots are the snapshot settings the stores ran with (nil:
	// umstored's defaults), SnapshotLog what their logs said about
	// snapshots.
	Snapshots   *SnapshotSettings `json:"snapshots"`
	SnapshotLog SnapshotLog       `json:"snapshot_log"`
}

// scheduleRand is the random source of schedule index of a run with seed:
// a schedule can be replayed alone (--start index --schedules 1).
func scheduleRand(seed int64, index int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(index)))
}

// sourceNames names the sources a schedule publishes on.
func sourceNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i+1)
	}
	return out
}

// runSchedule runs one schedule: a fresh deployment, publishers,
// followers and durable receivers, the planned faults (each healed, and the deployment restored
// after each host fault), a final heal and restoration, the final reads,
// the checks, and the teardown. Whatever happens, every process it started
// is stopped and every rule it added removed before it returns.
func runSchedule(parent context.Context, env *runEnv, index int) (out scheduleResult) {
	start := time.Now()
	opts := env.opts
	rng := scheduleRand(opts.Seed, index)
	sources := sourceNames(opts.Sources)
	plan := planSchedule(rng, opts.planConfig(sources))
	var snaps *SnapshotSettings
	if !opts.DefaultSnapshots {
		snaps = pickSnapshotSettings(opts.Seed, index)
	}
	res := scheduleResult{Index: index, Plan: plan, Kinds: map[string]int{}, Snapshots: snaps}
	log := env.log.With("schedule", index)
	hist := NewHistory(index, opts.Seed, sources)
	hist.Plan = plan
	hist.Snapshots = snaps
	limits := lifetimeLimits(opts)
	hist.Lifetimes = limits
	hist.RetentionReleases = retentionCanRelease(opts, snaps, limits)
	rpp := pickRPP(sources, opts.PacedSource)
	hist.RPP = rpp

	// ctx bounds the set-up and the faults; the final phase (heal, restore,
	// flush, read back) has its own bound, so a schedule that ran out of
	// time is still checked.
	ctx, cancel := context.WithTimeout(parent, opts.ScheduleTimeout)
	defer cancel()
	dir := filepath.Join(env.workDir, fmt.Sprintf("schedule-%03d", index))
	res.Dir = dir
	var c *cluster
	// Runs last, after every process is stopped: the hosts' disks go
	// (their contents copied beside the logs when the schedule is kept),
	// then the schedule's directory unless it is kept.
	defer func() {
		if c != nil {
			if err := c.closeDisks(out.Kept); err != nil {
				log.Error("could not remove the hosts' disks", "err", err)
			}
		}
		if !out.Kept {
			if err := os.RemoveAll(dir); err != nil {
				log.Warn("could not remove the schedule's directory", "dir", dir, "err", err)
			}
			out.Dir = ""
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		hist.Problemf("harness", "create %s: %v", dir, err)
		return finish(parent, env, hist, res, start, log)
	}
	var planText []string
	for _, f := range plan {
		planText = append(planText, f.String())
	}
	log.Info("schedule planned", "seed", opts.Seed, "faults", strings.Join(planText, "; "), "snapshots", snaps.String(), "rpp", rpp.String(), "limits", limits.String(), "lock", opts.Lock, "dir", dir)

	base, err := freeBasePort(rng.IntN(1000) + index*3)
	if err != nil {
		hist.Problemf("harness", "%v", err)
		return finish(parent, env, hist, res, start, log)
	}
	c, err = newCluster(ctx, dir, env.bin, base, opts.SlowDisks, slices.Concat(snaps.args(), rpp.args(), limits.args(), lockArgs(opts.Lock)), log)
	if err != nil {
		hist.Problemf("harness", "%v", err)
		return finish(parent, env, hist, res, start, log)
	}
	hist.SetLayout(c.layout())
	for _, h := range c.hosts {
		h.onExit = func(inc int, err error) { hist.DaemonExited(h.name, inc, err) }
		h.onEnd = func(inc int, at time.Time) { hist.HostEnded(h.name, inc, at) }
		h.onStart = func(inc int, addr, deploy string) {
			run := HostRun{Host: h.name, Incarnation: inc, Addr: addr, File: filepath.Base(deploy), At: time.Now()}
			if f := c.file(deploy); f != nil {
				run.FileAddrs = f.Addrs
			}
			hist.HostStarted(run)
		}
	}
	pubs := map[string]*pubProc{}
	for _, s := range sources {
		pubs[s] = &pubProc{
			exe: env.exe, hist: hist, log: log,
			logPath: filepath.Join(dir, "publisher-"+s+".log"),
			base: childConfig{Source: s, Deployment: c.deploy, Rate: opts.Rate, Count: opts.Messages,
				Size: payloadSize, RegisterFor: 90 * time.Second},
		}
		if opts.PublisherState {
			pubs[s].base.StateFile = filepath.Join(dir, "publisher-"+s+".state")
		}
		if rpp.paced(s) {
			pubs[s].base.Paced = rpp.Mode
		}
	}
	rcvs := map[string]*rcvProc{}
	for _, s := range sources {
		rcvs[s] = &rcvProc{
			exe: env.exe, hist: hist, log: log,
			logPath: filepath.Join(dir, "receiver-"+s+".log"),
			base:    receiverChildConfig{Source: s, Deployment: c.deploy, Name: durableName(s), Paced: rpp.paced(s)},
		}
	}
	nem := &nemesis{c: c, pubs: pubs, rcvs: rcvs, followers: map[string]*follower{}, part: env.part, hist: hist, log: log, exe: env.exe, dir: dir}

	// Background work (monitor, followers) ends with watchCancel.
	watchCtx, watchCancel := context.WithCancel(parent)
	var bg sync.WaitGroup
	stopAll := func() {
		for _, p := range pubs {
			p.kill9()
		}
		for _, r := range rcvs {
			r.kill9()
		}
		watchCancel()
		bg.Wait()
		if env.part != nil {
			if err := env.part.heal(); err != nil {
				hist.Problemf("harness", "heal the link: %v", err)
			}
		}
		for _, h := range c.hosts {
			h.stop()
		}
	}
	defer stopAll()

	body := func() {
		for _, h := range c.hosts {
			if err := h.start("first start"); err != nil {
				hist.Problemf("harness", "%v", err)
				return
			}
		}
		if err := c.waitRestored(ctx, opts.RestoreTimeout); err != nil {
			hist.Problemf("not-restored", "the new deployment did not come up: %v", err)
			return
		}
		bg.Add(1)
		go func() { defer bg.Done(); c.monitor(watchCtx, hist) }()
		for _, s := range sources {
			fl := &follower{source: s, hist: hist, log: quietLogger(log), parent: watchCtx, wg: &bg}
			nem.followers[s] = fl
			fl.start(c.deploy, c.groups)
			if rpp.paced(s) {
				// A group records a receiver's registration only once it
				// holds the source: the paced source's publisher registers
				// first, then its durable receiver, so that the receiver's
				// hold is on record before retention could release
				// anything.
				if err := pubs[s].start(); err != nil {
					hist.Problemf("harness", "%v", err)
					return
				}
				if err := pubs[s].waitRegistered(60 * time.Second); err != nil {
					hist.Problemf("publisher", "%v", err)
					return
				}
				if err := rcvs[s].start(false); err != nil {
					hist.Problemf("harness", "%v", err)
					return
				}
				if err := rcvs[s].waitRegistered(30 * time.Second); err != nil {
					hist.Problemf("receiver", "%v", err)
					return
				}
				continue
			}
			if err := rcvs[s].start(false); err != nil {
				hist.Problemf("harness", "%v", err)
				return
			}
			if err := pubs[s].start(); err != nil {
				hist.Problemf("harness", "%v", err)
				return
			}
		}
		// Publishing is under way before the first fault.
		for _, s := range sources {
			deadline := time.Now().Add(30 * time.Second)
			for hist.MaxAcked(s) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
				_ = sleepCtx(ctx, 100*time.Millisecond)
			}
			if hist.MaxAcked(s) == 0 {
				hist.Problemf("publisher", "source %s had nothing acknowledged 30s after it started", s)
				return
			}
		}
		// With small snapshot settings, every store compacts its log
		// before the first fault, so that a wipe, even the first fault,
		// ends in snapshot installs.
		if snaps != nil {
			t0 := time.Now()
			if missing := c.waitSnapshotted(ctx, 30*time.Second); len(missing) > 0 {
				log.Warn("not every store took a snapshot before the first fault; a wipe may catch up from the log", "without_snapshot", strings.Join(missing, ","))
			} else {
				log.Info("every store took a snapshot", "took", time.Since(t0).Round(100*time.Millisecond))
			}
		}
		for i, f := range plan {
			if ctx.Err() != nil {
				hist.Problemf("timeout", "the schedule ran out of time before fault %d: %v", i+1, ctx.Err())
				return
			}
			rec, err := nem.inject(ctx, f)
			if err != nil {
				hist.Problemf("harness", "fault %d (%s): %v", i+1, f, err)
				return
			}
			if f.hostFault() {
				t0 := time.Now()
				if err := c.waitRestored(ctx, opts.RestoreTimeout); err != nil {
					hist.Problemf("not-restored", "after fault %d (%s): %v%s", i+1, f, err, stacksNote(c.dumpStacks(parent, fmt.Sprintf("fault-%d", i+1))))
					return
				}
				hist.FaultRestored(rec, time.Now())
				log.Info("restored", "after", f.String(), "took", time.Since(t0).Round(100*time.Millisecond))
			}
			_ = sleepCtx(ctx, f.Quiet)
		}
	}
	body()

	// Heal everything and wait for full restoration.
	endStart := time.Now()
	ctx, cancelEnd := context.WithTimeout(parent, finalPhase)
	defer cancelEnd()
	if err := nem.healAll(); err != nil {
		hist.Problemf("harness", "heal: %v", err)
	}
	if err := c.waitRestored(ctx, opts.RestoreTimeout); err != nil {
		hist.Problemf("not-restored", "after the final heal: %v%s", err, stacksNote(c.dumpStacks(parent, "final")))
	}
	// Publishers finish: register if a restarted one has not yet (the
	// stores free a killed publisher's source after source-activity-timeout),
	// stop sending, flush, exit.
	var pw sync.WaitGroup
	for _, p := range pubs {
		pw.Add(1)
		go func() {
			defer pw.Done()
			if err := p.waitRegistered(75 * time.Second); err != nil {
				hist.Problemf("publisher", "%v", err)
			}
			// A paced publisher held back at the retention limit flushes
			// only once its receiver (restarted with a new session, some
			// 30 s after the kill) consumes again.
			if rpp.paced(p.base.Source) {
				if err := rcvs[p.base.Source].waitRegistered(75 * time.Second); err != nil {
					hist.Problemf("receiver", "%v", err)
				}
			}
			hist.Stopping(p.base.Source)
			p.stop(45 * time.Second)
		}()
	}
	pw.Wait()
	log.Info("publishers finished", "took", time.Since(endStart).Round(100*time.Millisecond))
	for _, s := range sources {
		if err := waitFollower(ctx, hist, s, 30*time.Second); err != nil {
			hist.Problemf("receiver", "%v", err)
		}
	}
	// The durable receivers catch up too (one restarted with a new session
	// registers only once the stores expired the killed one's, after
	// receiver-activity-timeout), then close, which records their
	// positions: the status sample after the final reads shows them.
	var rw sync.WaitGroup
	for _, r := range rcvs {
		rw.Add(1)
		go func() {
			defer rw.Done()
			if err := r.waitCaughtUp(75 * time.Second); err != nil {
				hist.Problemf("receiver", "%v", err)
			}
			r.stop(20 * time.Second)
		}()
	}
	rw.Wait()
	watchCancel()
	bg.Wait()
	log.Info("followers and durable receivers caught up", "took", time.Since(endStart).Round(100*time.Millisecond))
	// The final read is a new client: it is given the newest deployment
	// file, which places every host where it is.
	for _, s := range sources {
		hist.SetFinal(s, finalRead(ctx, c.latestFile().Groups, s, hist.MaxAcked(s), quietLogger(log)))
	}
	log.Info("final reads done", "took", time.Since(endStart).Round(100*time.Millisecond))
	c.sample(ctx, hist) // what every store holds at the end
	stopAll()
	log.Info("deployment stopped", "took", time.Since(endStart).Round(100*time.Millisecond))
	for _, h := range c.hosts {
		scan, err := scanHostLogFile(h.name, h.logPath)
		if err != nil {
			hist.Problemf("harness", "%v", err)
			continue
		}
		hist.AddBootstraps(scan.Bootstraps)
		for _, o := range scan.Overlaps {
			hist.ObserveCatchUp(o)
		}
		hist.AddSnapshotLog(scan.Snapshots)
		hist.AddRetentionLog(scan.Retention)
		hist.AddSessionLog(scan)
	}
	return finish(parent, env, hist, res, start, log)
}

// stacksNote names the goroutine dumps kept, for a problem's detail.
func stacksNote(files []string) string {
	if len(files) == 0 {
		return ""
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	return " (the daemons' goroutine stacks are in " + strings.Join(names, ", ") + ")"
}

// payloadSize is the size of every payload a publisher child sends.
const payloadSize = 100

// finalPhase bounds the final phase of a schedule (heal, restore, flush,
// read back).
const finalPhase = 4 * time.Minute

// retentionCanRelease says whether the stores' retention limits (the
// schedule's --retention-max-messages and --retention-max-age, else umstored
// run's defaults) could release any message a schedule publishes: the most
// a source can publish is --rate messages of payloadSize bytes a second for
// the schedule and its final phase.
func retentionCanRelease(opts options, snaps *SnapshotSettings, limits *LifetimeLimits) bool {
	def := storegroup.DefaultConfig()
	if snaps != nil && snaps.RetentionMaxMessages > 0 {
		def.RetentionMaxMessages = snaps.RetentionMaxMessages
	}
	if limits != nil {
		def.RetentionMaxAge = limits.RetentionMaxAge
	}
	span := opts.ScheduleTimeout + finalPhase
	most := uint64(float64(opts.Rate) * span.Seconds())
	return def.RetentionMaxMessages > 0 && most > def.RetentionMaxMessages ||
		def.RetentionMaxBytes > 0 && most*payloadSize > def.RetentionMaxBytes ||
		def.RetentionMaxAge > 0 && def.RetentionMaxAge < span
}

// finish checks the history, keeps or removes the schedule's directory,
// and fills in the result.
func finish(parent context.Context, env *runEnv, hist *History, res scheduleResult, start time.Time, log *slog.Logger) scheduleResult {
	res.Result = Check(hist)
	if parent.Err() != nil {
		// Interrupted (Ctrl-C or the run's --timeout): what was cut short
		// proves nothing either way.
		res.Interrupted = true
		res.Result = Result{Acknowledged: res.Acknowledged, Delivered: res.Delivered}
	}
	hist.mu.Lock()
	for _, f := range hist.Faults {
		res.Faults++
		res.Kinds[string(f.Kind)]++
	}
	res.SnapshotLog = hist.SnapshotLog
	hist.mu.Unlock()
	res.Duration = time.Since(start)
	bad := len(res.Violations) > 0 || res.Lost > 0
	if bad || env.opts.Keep {
		res.Kept = true
		if err := writeEvidence(hist, res, env.opts); err != nil {
			log.Error("could not write the evidence", "err", err)
		}
	}
	return res
}

// writeEvidence writes the history, the verdict and how to reproduce the
// schedule into its directory.
func writeEvidence(hist *History, res scheduleResult, opts options) error {
	if res.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return err
	}
	hist.mu.Lock()
	js, err := json.MarshalIndent(hist, "", " ")
	faults := slices.Clone(hist.Faults)
	hist.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(res.Dir, "history.json"), js, 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %d of seed %d\nreproduce: %s\nsnapshots: %s\nrpp: %s\n\nplan:\n", res.Index, opts.Seed, reproduceCommand(opts, res.Index), res.Snapshots, hist.RPP)
	for i, f := range res.Plan {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, f)
	}
	b.WriteString("\nfaults injected:\n")
	for _, f := range faults {
		fmt.Fprintf(&b, "  - %s %s from %s to %s", f.Kind, f.Target, f.Start.Format("15:04:05.000"), f.End.Format("15:04:05.000"))
		if !f.Restored.IsZero() {
			fmt.Fprintf(&b, ", restored %s", f.Restored.Format("15:04:05.000"))
		}
		if f.Note != "" {
			fmt.Fprintf(&b, ": %s", f.Note)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nacknowledged %d, lost %d, delivered %d, violations %d\n", res.Acknowledged, res.Lost, res.Delivered, len(res.Violations))
	if res.RPP != nil {
		fmt.Fprintf(&b, "rpp: %s\n", res.RPP)
	}
	sl := res.SnapshotLog
	fmt.Fprintf(&b, "snapshots taken %d, sent %d (failed %d), installed %d (failed %d), restored at start %d\n", sl.Taken, sl.Sent, sl.SendFailed, sl.Installed, sl.ReceiveFailed, sl.RestoredAtStart)
	for _, in := range sl.Installs {
		fmt.Fprintf(&b, "  - %s installed a snapshot at %s (host %s, incarnation %d)\n", in.Store, in.At.Format(time.RFC3339Nano), in.Host, in.Incarnation)
	}
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "  - %s\n", v)
	}
	return os.WriteFile(filepath.Join(res.Dir, "verdict.txt"), []byte(b.String()), 0o644)
}

// quietLogger is the SDKs' logger: warnings and errors only.
func quietLogger(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn})
}

// levelFilter drops records below a level.
type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(a), f.min}
}

func (f levelFilter) WithGroup(n string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(n), f.min}
}
