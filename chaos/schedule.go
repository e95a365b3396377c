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
	r := newScheduleRun(env, index)
	res := scheduleResult{Index: index, Plan: r.plan, Kinds: map[string]int{}, Snapshots: r.snaps}
	log, hist := r.log, r.hist

	// ctx bounds the set-up and the faults; the final phase (heal, restore,
	// flush, read back) has its own bound, so a schedule that ran out of
	// time is still checked.
	ctx, cancel := context.WithTimeout(parent, r.opts.ScheduleTimeout)
	defer cancel()
	r.dir = filepath.Join(env.workDir, fmt.Sprintf("schedule-%03d", index))
	res.Dir = r.dir
	// Runs last, after every process is stopped: the hosts' disks go
	// (their contents copied beside the logs when the schedule is kept),
	// then the schedule's directory unless it is kept.
	defer func() {
		if r.c != nil {
			if err := r.c.closeDisks(out.Kept); err != nil {
				log.Error("could not remove the hosts' disks", "err", err)
			}
		}
		if !out.Kept {
			if err := os.RemoveAll(r.dir); err != nil {
				log.Warn("could not remove the schedule's directory", "dir", r.dir, "err", err)
			}
			out.Dir = ""
		}
	}()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		hist.Problemf("harness", "create %s: %v", r.dir, err)
		return finish(parent, env, hist, res, start, log)
	}
	r.logPlan()
	if err := r.deploy(ctx); err != nil {
		hist.Problemf("harness", "%v", err)
		return finish(parent, env, hist, res, start, log)
	}
	r.prepareClients()

	// Background work (monitor, followers) ends with watchCancel.
	r.watchCtx, r.watchCancel = context.WithCancel(parent)
	defer r.stopAll()

	r.run(ctx, parent)

	// Heal everything and wait for full restoration.
	endStart := time.Now()
	ctx, cancelEnd := context.WithTimeout(parent, finalPhase)
	defer cancelEnd()
	r.healAndRestore(ctx, parent)
	r.finishPublishers()
	log.Info("publishers finished", "took", time.Since(endStart).Round(100*time.Millisecond))
	r.finishReceivers(ctx)
	log.Info("followers and durable receivers caught up", "took", time.Since(endStart).Round(100*time.Millisecond))
	r.readBack(ctx)
	log.Info("final reads done", "took", time.Since(endStart).Round(100*time.Millisecond))
	r.c.sample(ctx, hist) // what every store holds at the end
	r.stopAll()
	log.Info("deployment stopped", "took", time.Since(endStart).Round(100*time.Millisecond))
	r.scanHostLogs()
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
