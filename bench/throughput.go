package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// throughputPhase runs the alternating throughput runs, the half-load runs,
// the fixed-rate runs, the sources table and the CPU profiles against the
// systems they need (c.needs), all started at once: umstored dev, three
// umstored run hosts (one group), and two JetStream clusters.
func throughputPhase(ctx context.Context, c config, bins umBins, work string, res *results, logf func(string, ...any)) error {
	var started []string
	for _, s := range c.Systems {
		if c.needs(s) {
			started = append(started, s)
		}
	}
	logf("starting %s (work dir %s)", strings.Join(started, ", "), work)
	rig := &throughputRig{bins: bins, logf: logf}
	var err error
	if c.needs(sysUM) {
		if rig.dev, err = startUmDev(ctx, bins, filepath.Join(work, "umstore-dev"), filepath.Join(work, "umstored-dev.log"), bins.storeArgs()); err != nil {
			return err
		}
		defer rig.dev.p.stop(30 * time.Second)
	}
	if c.needs(sysUM1) {
		if rig.one, err = startHosts(ctx, bins, filepath.Join(work, "umstore-1g"), oneGroup, bins.storeArgs()); err != nil {
			return err
		}
		defer rig.one.stop()
	}
	if c.needs(sysJSSync) {
		if rig.jsSync, err = startJSCluster(ctx, "jssync", filepath.Join(work, "js-sync"), true); err != nil {
			return err
		}
		defer rig.jsSync.shutdown()
	}
	if c.needs(sysJSDefault) {
		if rig.jsDef, err = startJSCluster(ctx, "jsdefault", filepath.Join(work, "js-default"), false); err != nil {
			return err
		}
		defer rig.jsDef.shutdown()
	}
	rig.umpubLog = filepath.Join(work, "umpub.log")

	if c.Throughput {
		if err := rig.throughputRuns(ctx, c, res); err != nil {
			return err
		}
	}
	if c.HalfLoad {
		if err := rig.halfLoadRuns(ctx, c, res); err != nil {
			return err
		}
	}
	if len(c.Rates) > 0 {
		if err := rig.fixedRateRuns(ctx, c, res); err != nil {
			return err
		}
	}
	if len(c.SourcesList) > 0 {
		if err := rig.sourcesRuns(ctx, c, res); err != nil {
			return err
		}
	}
	if c.CPUProfile != "" && c.Throughput {
		rig.profileRuns(ctx, c, res)
	}
	rig.stop()
	// The throughput data is no longer needed; free the disk for what follows.
	for _, d := range []string{"umstore-dev", "umstore-1g", "js-sync", "js-default"} {
		_ = os.RemoveAll(filepath.Join(work, d))
	}
	return nil
}

// needs reports whether a run of c uses system: every system of
// --systems for the throughput runs, all but umstore 1 group for the
// fixed-rate runs, umstore for the sources table.
func (c config) needs(system string) bool {
	switch {
	case !c.has(system):
		return false
	case c.Throughput:
		return true
	case len(c.Rates) > 0:
		return true
	}
	return len(c.SourcesList) > 0 && system == sysUM
}

// throughputRig is the systems of the throughput phase, all running at
// once (nil: not measured), and the count of runs made against them.
type throughputRig struct {
	bins          umBins
	dev           *umDev     // umstored dev (sysUM)
	one           *umHosts   // three umstored run hosts, one group (sysUM1)
	jsSync, jsDef *jsCluster // JetStream, sync and default (sysJSSync, sysJSDefault)
	umpubLog      string
	nrun          int // runs made so far: each run's seed
	logf          func(string, ...any)
}

// runOne makes run runNo of load l against system and logs its result.
func (t *throughputRig) runOne(ctx context.Context, system string, l load, runNo int) runResult {
	t.nrun++
	// Each run starts with nothing left to write back: JetStream
	// default acknowledges before its pages reach the disk, and the
	// kernel would write them back during the next system's run.
	syscall.Sync()
	l.seed = uint64(t.nrun)
	r := runResult{System: system, Size: l.size, Run: runNo, Rate: l.rate, Stores: storesOf(system)}
	var err error
	switch system {
	case sysUM, sysUM1:
		deployment, pids := "", []string(nil)
		if system == sysUM {
			deployment, pids = t.dev.deployment, []string{t.dev.p.pid()}
		} else {
			deployment, pids = t.one.deployment, t.one.pids()
		}
		before := readProcIOs(pids...)
		var u umpubResult
		u, err = runUmpub(ctx, t.bins, deployment, fmt.Sprintf("b%d", t.nrun), l, t.umpubLog)
		r.DiskWriteBytes, r.CPUSeconds = settleProcIO(ctx, pids...).since(before)
		r.ClientCPUSeconds = u.CPUSeconds
		r.Messages, r.MsgsPerS, r.MBPerS, r.ElapsedS, r.LatencyUS = u.Stable, u.MsgsPerS, u.MBPerS, u.ElapsedS, u.LatencyUS
		r.RegisterS = u.RegisterS
	default:
		cl := t.jsSync
		if system == sysJSDefault {
			cl = t.jsDef
		}
		var j jsResult
		j, err = cl.runJS(ctx, l)
		r.Messages, r.MsgsPerS, r.MBPerS, r.ElapsedS, r.LatencyUS = j.Acked, j.MsgsPerS, j.MBPerS, j.ElapsedS, j.LatencyUS
		r.DiskWriteBytes, r.CPUSeconds = j.DiskWriteBytes, j.CPUSeconds
	}
	if err != nil {
		r.Error = err.Error()
	}
	what := "max"
	if l.rate > 0 {
		what = fmt.Sprintf("rate %.0f", l.rate)
	}
	if l.sources > 1 {
		what += fmt.Sprintf(" K=%d", l.sources)
	}
	t.logf("run %d %-22s %5d B %-10s %8.0f msgs/s %7.2f MB/s  p50 %6.1f ms  p99 %7.1f ms  disk %5.2f× payload (%4.2f per store)  CPU %5.2f s (%5.1f s per M msgs) %s",
		runNo, system, l.size, what, r.MsgsPerS, r.MBPerS, float64(r.LatencyUS.P50)/1e3, float64(r.LatencyUS.P99)/1e3,
		r.writePerPayload(), r.writePerPayloadPerStore(), r.CPUSeconds+r.ClientCPUSeconds, r.cpuPerMillion(), r.Error)
	return r
}

// throughputRuns makes the throughput runs: for each repetition and size,
// the systems one after the other, the order rotated every repetition.
func (t *throughputRig) throughputRuns(ctx context.Context, c config, res *results) error {
	n := len(c.Systems)
	for i := 0; i < c.Runs; i++ {
		for _, size := range c.Sizes {
			for k := range n {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				sys := c.Systems[(k+i)%n]
				res.Runs = append(res.Runs, t.runOne(ctx, sys, load{size: size, count: c.Count, sources: c.Sources, flight: c.Flight, payload: c.Payload}, i+1))
			}
		}
	}
	res.Throughput = summarize(res.Runs, c.Sizes, c.Systems, false)
	return nil
}

// halfLoadRuns makes the half-load runs, in the same rotation: each size
// at half the rate umstore (dev, else one group) reached at it.
func (t *throughputRig) halfLoadRuns(ctx context.Context, c config, res *results) error {
	n := len(c.Systems)
	base := sysUM
	if !c.has(sysUM) {
		base = sysUM1
	}
	for i := 0; i < c.Runs; i++ {
		for _, size := range c.Sizes {
			rate := 0.5 * find(res.Throughput, size, base).MsgsPerS
			if rate <= 0 {
				continue
			}
			// Half the messages of a throughput run: about as long.
			l := load{size: size, count: max(c.Sources, c.Count/2), sources: c.Sources, flight: c.Flight, rate: rate, payload: c.Payload}
			for k := range n {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.HalfRuns = append(res.HalfRuns, t.runOne(ctx, c.Systems[(k+i)%n], l, i+1))
			}
		}
	}
	res.HalfLoad = summarize(res.HalfRuns, c.Sizes, c.Systems, true)
	return nil
}

// profileRuns takes a CPU profile of umstore (dev, else one group) at each
// size, at its throughput rate; a profile that fails becomes a note.
func (t *throughputRig) profileRuns(ctx context.Context, c config, res *results) {
	target, system, deployment := "", sysUM, ""
	switch {
	case t.dev != nil:
		target, deployment = t.dev.admin, t.dev.deployment
	case t.one != nil:
		target, system, deployment = t.one.hosts[0].admin, sysUM1, t.one.deployment
	}
	for _, size := range c.Sizes {
		if target == "" || ctx.Err() != nil {
			break
		}
		file := profileFile(c.CPUProfile, size, len(c.Sizes))
		p, err := profileRun(ctx, c, t.bins, target, deployment, size, find(res.Throughput, size, system).MsgsPerS, file, t.umpubLog, t.logf)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("CPU profile at %s failed: %v", sizeName(size), err))
			continue
		}
		p.System = system
		res.Profiles = append(res.Profiles, p)
	}
}

// stop stops every system of the rig, umstore first.
func (t *throughputRig) stop() {
	if t.dev != nil {
		t.dev.p.stop(30 * time.Second)
	}
	if t.one != nil {
		t.one.stop()
	}
	if t.jsSync != nil {
		t.jsSync.shutdown()
	}
	if t.jsDef != nil {
		t.jsDef.shutdown()
	}
}

// profileFile is where the profile of one size goes: FILE itself with one
// size, else FILE with the size before its extension (cpu-64B.prof).
func profileFile(file string, size, sizes int) string {
	if sizes == 1 {
		return file
	}
	ext := filepath.Ext(file)
	return strings.TrimSuffix(file, ext) + "-" + strings.ReplaceAll(sizeName(size), " ", "") + ext
}

// profileRun runs umstore once more at the given size, long enough for a
// 10 s CPU profile of the umstored at admin (umstored dev, or the first host
// of one group).
func profileRun(ctx context.Context, c config, b umBins, admin, deployment string, size int, rate float64, file, logPath string, logf func(string, ...any)) (profile, error) {
	p := profile{Size: size, File: file}
	count := max(c.Count, int(rate*16))
	l := load{size: size, count: count, sources: c.Sources, flight: c.Flight, payload: c.Payload, seed: 1<<30 | uint64(size)}
	logf("profile: %d messages of %d B while taking a 10 s CPU profile of umstored", count, l.size)
	done := make(chan error, 1)
	go func() {
		r, err := runUmpub(ctx, b, deployment, fmt.Sprintf("profile%d", size), l, logPath)
		logf("profile: the profiled run made %.0f msgs/s stable (p99 %.1f ms)", r.MsgsPerS, float64(r.LatencyUS.P99)/1e3)
		done <- err
	}()
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return p, err
	}
	perr := fetchProfile(ctx, admin, 10, file)
	if err := <-done; err != nil {
		return p, err
	}
	if perr != nil {
		return p, perr
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=30", file).CombinedOutput()
	if err != nil {
		return p, fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	cum, _ := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=40", file).CombinedOutput()
	_ = os.WriteFile(file+".top.txt", append(append(out, "\n--- by cumulative ---\n"...), cum...), 0o644)
	logf("profile: saved %s and %s.top.txt", file, file)
	p.Top = string(out)
	return p, nil
}
