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

// throughputPhase runs the alternating throughput runs, the half-load runs
// and the CPU profiles against the systems of c.Systems, all started at
// once: umstored dev, three umstored run hosts (one group), and two
// JetStream clusters.
func throughputPhase(ctx context.Context, c config, bins umBins, work string, res *results, logf func(string, ...any)) error {
	logf("starting %s (work dir %s)", strings.Join(c.Systems, ", "), work)
	var (
		dev           *umDev
		one           *umHosts
		jsSync, jsDef *jsCluster
		err           error
	)
	if c.has(sysUM) {
		if dev, err = startUmDev(ctx, bins, filepath.Join(work, "umstore-dev"), filepath.Join(work, "umstored-dev.log"), bins.storeArgs()); err != nil {
			return err
		}
		defer dev.p.stop(30 * time.Second)
	}
	if c.has(sysUM1) {
		if one, err = startHosts(ctx, bins, filepath.Join(work, "umstore-1g"), oneGroup, bins.storeArgs()); err != nil {
			return err
		}
		defer one.stop()
	}
	if c.has(sysJSSync) {
		if jsSync, err = startJSCluster(ctx, "jssync", filepath.Join(work, "js-sync"), true); err != nil {
			return err
		}
		defer jsSync.shutdown()
	}
	if c.has(sysJSDefault) {
		if jsDef, err = startJSCluster(ctx, "jsdefault", filepath.Join(work, "js-default"), false); err != nil {
			return err
		}
		defer jsDef.shutdown()
	}
	umpubLog := filepath.Join(work, "umpub.log")
	nrun := 0
	runOne := func(system string, l load, runNo int) runResult {
		nrun++
		// Each run starts with nothing left to write back: JetStream
		// default acknowledges before its pages reach the disk, and the
		// kernel would write them back during the next system's run.
		syscall.Sync()
		l.seed = uint64(nrun)
		r := runResult{System: system, Size: l.size, Run: runNo, Rate: l.rate, Stores: storesOf(system)}
		var err error
		switch system {
		case sysUM, sysUM1:
			deployment, pids := "", []string(nil)
			if system == sysUM {
				deployment, pids = dev.deployment, []string{dev.p.pid()}
			} else {
				deployment, pids = one.deployment, one.pids()
			}
			before := readProcIOs(pids...)
			var u umpubResult
			u, err = runUmpub(ctx, bins, deployment, fmt.Sprintf("b%d", nrun), l, umpubLog)
			r.DiskWriteBytes, r.CPUSeconds = settleProcIO(ctx, pids...).since(before)
			r.ClientCPUSeconds = u.CPUSeconds
			r.Messages, r.MsgsPerS, r.MBPerS, r.ElapsedS, r.LatencyUS = u.Stable, u.MsgsPerS, u.MBPerS, u.ElapsedS, u.LatencyUS
		default:
			cl := jsSync
			if system == sysJSDefault {
				cl = jsDef
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
		logf("run %d %-22s %5d B %-10s %8.0f msgs/s %7.2f MB/s  p50 %6.1f ms  p99 %7.1f ms  disk %5.2f× payload (%4.2f per store)  CPU %5.2f s (%5.1f s per M msgs) %s",
			runNo, system, l.size, what, r.MsgsPerS, r.MBPerS, float64(r.LatencyUS.P50)/1e3, float64(r.LatencyUS.P99)/1e3,
			r.writePerPayload(), r.writePerPayloadPerStore(), r.CPUSeconds+r.ClientCPUSeconds, r.cpuPerMillion(), r.Error)
		return r
	}

	// Throughput: for each repetition and size, the systems one after the
	// other, the order rotated every repetition.
	n := len(c.Systems)
	for i := 0; i < c.Runs; i++ {
		for _, size := range c.Sizes {
			for k := range n {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				sys := c.Systems[(k+i)%n]
				res.Runs = append(res.Runs, runOne(sys, load{size: size, count: c.Count, sources: c.Sources, flight: c.Flight, payload: c.Payload}, i+1))
			}
		}
	}
	res.Throughput = summarize(res.Runs, c.Sizes, c.Systems, false)

	if c.HalfLoad {
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
					res.HalfRuns = append(res.HalfRuns, runOne(c.Systems[(k+i)%n], l, i+1))
				}
			}
		}
		res.HalfLoad = summarize(res.HalfRuns, c.Sizes, c.Systems, true)
	}

	if c.CPUProfile != "" {
		target, system, deployment := "", sysUM, ""
		switch {
		case dev != nil:
			target, deployment = dev.admin, dev.deployment
		case one != nil:
			target, system, deployment = one.hosts[0].admin, sysUM1, one.deployment
		}
		for _, size := range c.Sizes {
			if target == "" || ctx.Err() != nil {
				break
			}
			file := profileFile(c.CPUProfile, size, len(c.Sizes))
			p, err := profileRun(ctx, c, bins, target, deployment, size, find(res.Throughput, size, system).MsgsPerS, file, umpubLog, logf)
			if err != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("CPU profile at %s failed: %v", sizeName(size), err))
				continue
			}
			p.System = system
			res.Profiles = append(res.Profiles, p)
		}
	}
	if dev != nil {
		dev.p.stop(30 * time.Second)
	}
	if one != nil {
		one.stop()
	}
	if jsSync != nil {
		jsSync.shutdown()
	}
	if jsDef != nil {
		jsDef.shutdown()
	}
	// The throughput data is no longer needed; free the disk for what follows.
	for _, d := range []string{"umstore-dev", "umstore-1g", "js-sync", "js-default"} {
		_ = os.RemoveAll(filepath.Join(work, d))
	}
	return nil
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
