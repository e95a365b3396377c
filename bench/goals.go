package main

import (
	"fmt"
	"strconv"
	"strings"
)

// goal is one row of the goal table (issues 15 and 26) with this run's figure.
type goal struct {
	Figure   string `json:"figure"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	// Met is "yes", "no", or "n/a" (not measured in this run, or a figure
	// with no threshold).
	Met string `json:"met"`
}

func metText(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// computeGoals evaluates every row of the goal table on what this run
// measured; rows it did not measure say how to measure them.
func computeGoals(r *results) []goal {
	var g []goal
	g = append(g, throughputGoals(r)...)
	g = append(g, writeGoal(r))
	g = append(g, halfLoadGoals(r)...)
	g = append(g, catchupGoal(r))
	g = append(g, soakGoal(r))
	g = append(g, memoryGoal(r))
	g = append(g, cpuGoals(r)...)
	g = append(g, fixedRateGoals(r)...)
	g = append(g, sourcesGoals(r)...)
	return g
}

// notMeasured is the row of a goal this run did not measure, saying how
// to measure it.
func notMeasured(figure, target, how string) goal {
	return goal{figure, target, "not measured (" + how + ")", "n/a"}
}

// throughputGoals are the throughput ratios of umstore to JetStream R3
// `sync_always`.
func throughputGoals(r *results) []goal {
	var g []goal
	for _, x := range []struct {
		system string
		size   int
		min    float64
		figure string
	}{
		{sysUM, 64, 2.0, "six stores (two groups, `any`) vs JetStream R3 `sync_always`, 64 B"},
		{sysUM, 1024, 1.5, "same, 1 KiB"},
		{sysUM1, 64, 2.0, "one group of three (three `umstored run` hosts) vs JetStream R3 `sync_always`, 64 B"},
		{sysUM1, 1024, 2.0, "one group of three vs JetStream R3 `sync_always`, 1 KiB"},
	} {
		um, js := find(r.Throughput, x.size, x.system), find(r.Throughput, x.size, sysJSSync)
		target := fmt.Sprintf(">= %.1fx", x.min)
		if um.MsgsPerS == 0 || js.MsgsPerS == 0 {
			g = append(g, notMeasured(x.figure, target, "needs --sizes with "+sizeName(x.size)+" and --systems with "+x.system+" and js-sync"))
			continue
		}
		q := um.MsgsPerS / js.MsgsPerS
		g = append(g, goal{x.figure, target, fmt.Sprintf("%.2fx (%.0f vs %.0f msgs/s)", q, um.MsgsPerS, js.MsgsPerS), metText(q >= x.min)})
	}
	return g
}

// writeGoal is the bytes written per payload byte per store, at 1 KiB.
func writeGoal(r *results) goal {
	figure, target := "bytes written per payload byte per store, 1 KiB", "<= 1.3"
	var parts []string
	met, known := true, false
	for _, sys := range []string{sysUM, sysUM1} {
		if v := find(r.Throughput, 1024, sys).WritePerPayloadPerStore; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", sys, v))
			met, known = met && v <= 1.3, true
		}
	}
	if v := find(r.Throughput, 1024, sysJSSync).WritePerPayloadPerStore; v > 0 {
		parts = append(parts, fmt.Sprintf("(JetStream sync_always %.2f)", v))
	}
	if !known {
		return notMeasured(figure, target, "needs a 1 KiB throughput run of umstore with /proc/PID/io readable")
	}
	return goal{figure, target, strings.Join(parts, ", "), metText(met)}
}

// halfLoadGoals are the p99 publish-to-stable latencies at half load.
func halfLoadGoals(r *results) []goal {
	var g []goal
	half := func(size int, system string) row { return find(r.HalfLoad, size, system) }
	for _, size := range []int{64, 1024} {
		figure, target := "p99 publish-to-stable at half load, "+sizeName(size), "<= JetStream's (sync_always)"
		um, js := half(size, sysUM), half(size, sysJSSync)
		if um.P99US == 0 || js.P99US == 0 {
			g = append(g, notMeasured(figure, target, "needs --half-load with umstore and js-sync at "+sizeName(size)))
			continue
		}
		m := fmt.Sprintf("%.1f ms vs %.1f ms at %.0f msgs/s", um.P99US/1e3, js.P99US/1e3, um.Rate)
		if one := half(size, sysUM1); one.P99US > 0 {
			m += fmt.Sprintf(" (umstore 1 group %.1f ms)", one.P99US/1e3)
		}
		g = append(g, goal{figure, target, m, metText(um.P99US <= js.P99US)})
	}
	return g
}

// catchupGoal is the catch-up of a wiped store: the single store of the
// 1x3 layout when measured, else the slowest store of another layout.
func catchupGoal(r *results) goal {
	figure, target := "wiped store catch-up", ">= 0.5 of the disk's sequential bandwidth (same run)"
	var cr *catchupResult
	for _, c := range r.Catchup {
		if cr == nil || c.Layout == oneGroup.Name {
			cr = c
		}
	}
	if cr == nil || len(cr.Stores) == 0 || cr.DiskWriteMBps == 0 {
		return notMeasured(figure, target, "--catchup")
	}
	worst := cr.Stores[0]
	for _, s := range cr.Stores {
		if s.OfDisk < worst.OfDisk {
			worst = s
		}
	}
	which := ""
	if len(cr.Stores) > 1 {
		which = fmt.Sprintf("slowest of %d stores, ", len(cr.Stores))
	}
	m := fmt.Sprintf("%s: %s%s %.0f MB/s of payload = %.2f of %.0f MB/s", cr.Layout, which, worst.Name, worst.MBps, worst.OfDisk, cr.DiskWriteMBps)
	if d := cr.Disk; d != nil && d.CopyMBps > 0 {
		m += fmt.Sprintf(" (a bare copy, nothing else: %.0f MB/s = %.2f; the catch-up makes %.2f of it)", d.CopyMBps, ratio(d.CopyMBps, cr.DiskWriteMBps), ratio(worst.MBps, d.CopyMBps))
	}
	return goal{figure, target, m, metText(worst.OfDisk >= 0.5)}
}

// soakGoal is the soak with retention cycling: throughput and disk use at
// the end against the start.
func soakGoal(r *results) goal {
	figure := "soak with retention cycling (--soak)"
	target := "throughput at the end within 10% of the start; disk use bounded"
	s := r.Soak
	if s == nil || len(s.Chunks) < 2 {
		return notMeasured(figure, target, "--soak 30m")
	}
	okT := s.EndOverStart >= 0.9
	okD := s.DiskLastThirdPeakMB <= 1.1*s.DiskFirstThirdPeakMB && s.Stopped == ""
	m := ""
	if s.Stopped != "" {
		m = s.Stopped + "; "
	}
	m += fmt.Sprintf("%.0f s: end %.0f vs start %.0f msgs/s (%.2f); disk peak %.0f MB (first third %.0f, last third %.0f); RSS peak %.0f MB",
		s.DurationS, s.EndMsgsPerS, s.StartMsgsPerS, s.EndOverStart, s.DiskPeakMB, s.DiskFirstThirdPeakMB, s.DiskLastThirdPeakMB, s.RSSPeakMB)
	return goal{figure, target + " (here: the last third's disk peak within 10% of the first third's)", m, metText(okT && okD)}
}

// memoryGoal is the RSS of umstored dev after retaining 1 GB per group.
func memoryGoal(r *results) goal {
	figure, target := "RSS after retaining 1 GB per group", "<= 300 MB"
	m := r.Memory
	if m == nil || len(m.Steps) < 2 {
		return notMeasured(figure, target, "--memory")
	}
	last := m.Steps[len(m.Steps)-1]
	met := metText(last.RSSMB <= 300)
	if last.RetainedMB < 1000 {
		met = "n/a (less than 1 GB retained)"
	}
	return goal{figure, target, fmt.Sprintf("umstored dev (six stores) %.0f MB at %.0f MB per group (peak %.0f MB; anonymous %.0f, mapped files %.0f)",
		last.RSSMB, last.RetainedMB, m.PeakRSSMB, last.AnonMB, last.FileMB), met}
}

// cpuGoals are the CPU seconds per million messages at each size: no
// threshold, every system.
func cpuGoals(r *results) []goal {
	var g []goal
	for _, size := range r.Config.Sizes {
		var parts []string
		for _, sys := range r.Config.Systems {
			if v := find(r.Throughput, size, sys).CPUPerMillion; v > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f", sys, v))
			}
		}
		if len(parts) > 0 {
			g = append(g, goal{"CPU seconds per million messages (servers + client), " + sizeName(size), "(no threshold)", strings.Join(parts, ", "), "n/a"})
		}
	}
	return g
}

// fixedRateGoals are issue 26's latency goals at fixed rates, 1 KiB:
// umstored dev's own at 1,000 msgs/s, and umstore against JetStream R3
// sync_always at 1,000 and 10,000 msgs/s.
func fixedRateGoals(r *results) []goal {
	figure, target := "1 KiB at 1,000 msgs/s, umstored dev", "p50 <= 1 ms, p99 <= 5 ms"
	var g []goal
	if um := find(findFixed(r.FixedRate, 1000, 1024).Systems, 1024, sysUM); len(um.Runs) == 0 {
		g = append(g, notMeasured(figure, target, "--rates with 1000, --sizes with 1024, --systems with umstore"))
	} else {
		g = append(g, goal{figure, target, fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", um.P50US/1e3, um.P99US/1e3), metText(um.P50US <= 1e3 && um.P99US <= 5e3)})
	}
	for _, rate := range []float64{1000, 10000} {
		figure := fmt.Sprintf("1 KiB at %s msgs/s: umstore's p50 and p99 vs JetStream R3 `sync_always`", thousands(rate))
		target := "at most half of JetStream's (ratio <= 0.5)"
		f := findFixed(r.FixedRate, rate, 1024)
		um, js := find(f.Systems, 1024, sysUM), find(f.Systems, 1024, sysJSSync)
		if len(um.Runs) == 0 || len(js.Runs) == 0 || f.P50Ratio == 0 || f.P99Ratio == 0 {
			g = append(g, notMeasured(figure, target, fmt.Sprintf("--rates with %.0f, --sizes with 1024, --systems with umstore and js-sync", rate)))
			continue
		}
		m := fmt.Sprintf("p50 %.2f× (%.2f vs %.2f ms), p99 %.2f× (%.2f vs %.2f ms)", f.P50Ratio, um.P50US/1e3, js.P50US/1e3, f.P99Ratio, um.P99US/1e3, js.P99US/1e3)
		g = append(g, goal{figure, target, m, metText(f.P50Ratio <= 0.5 && f.P99Ratio <= 0.5)})
	}
	return g
}

// sourcesGoals are issue 26's goals for many sources: umstore's
// throughput with K sources over its throughput with one.
func sourcesGoals(r *results) []goal {
	var g []goal
	for _, x := range []struct {
		k   int
		min float64
	}{{1000, 0.8}, {10000, 0.5}} {
		figure, target := fmt.Sprintf("throughput with K=%s sources ÷ K=1, umstored dev", thousands(float64(x.k))), fmt.Sprintf(">= %.1f", x.min)
		row, one := findSources(r.Sources, x.k), findSources(r.Sources, 1)
		switch {
		case row.Refused != "":
			g = append(g, goal{figure, target, "not measured: umpub refuses --sources " + strconv.Itoa(x.k) + " (" + row.Refused + ")", "n/a"})
		case row.MsgsPerS == 0 || one.MsgsPerS == 0:
			g = append(g, notMeasured(figure, target, fmt.Sprintf("--sources-list with 1 and %d", x.k)))
		default:
			g = append(g, goal{figure, target, fmt.Sprintf("%.2f (%.0f vs %.0f msgs/s)", row.OverOne, row.MsgsPerS, one.MsgsPerS), metText(row.OverOne >= x.min)})
		}
	}
	return g
}

// thousands writes a whole number with commas: 10000 -> "10,000".
func thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
