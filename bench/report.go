package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// What a run reports: medians per size and system, the machine it ran on,
// and the Markdown table BENCH.md quotes.

// find returns the row of one size and system, or the zero row.
func find(rows []row, size int, system string) row {
	for _, r := range rows {
		if r.Size == size && r.System == system {
			return r
		}
	}
	return row{}
}

// summarize takes medians per (size, system) over the successful runs and
// computes the ratios against umstore (and umstore 1 group).
func summarize(runs []runResult, sizes []int, systems []string, half bool) []row {
	var rows []row
	for _, size := range sizes {
		for _, sys := range systems {
			r := row{Size: size, System: sys, Stores: storesOf(sys)}
			var mps, mbs, p50, p99, p999, wpp, wpps, cpu, ccpu, cpm []float64
			for _, x := range runs {
				if x.Size != size || x.System != sys {
					continue
				}
				r.Rate = x.Rate
				if x.Error != "" {
					r.Failed++
					continue
				}
				mps = append(mps, x.MsgsPerS)
				mbs = append(mbs, x.MBPerS)
				p50 = append(p50, float64(x.LatencyUS.P50))
				p99 = append(p99, float64(x.LatencyUS.P99))
				p999 = append(p999, float64(x.LatencyUS.P999))
				wpp = appendKnown(wpp, x.writePerPayload())
				wpps = appendKnown(wpps, x.writePerPayloadPerStore())
				cpu = appendKnown(cpu, x.CPUSeconds)
				ccpu = appendKnown(ccpu, x.ClientCPUSeconds)
				cpm = appendKnown(cpm, x.cpuPerMillion())
			}
			r.Runs, r.P99Runs = mps, p99
			r.MsgsPerS, r.MBPerS, r.P50US, r.P99US, r.P999US = median(mps), median(mbs), median(p50), median(p99), median(p999)
			r.WritePerPayload, r.WritePerPayloadPerStore = median(wpp), median(wpps)
			r.CPUSeconds, r.ClientCPUSeconds, r.CPUPerMillion = median(cpu), median(ccpu), median(cpm)
			rows = append(rows, r)
		}
		um, one := find(rows, size, sysUM), find(rows, size, sysUM1)
		for i := range rows {
			x := &rows[i]
			if x.Size != size {
				continue
			}
			if half {
				if x.System != sysUM {
					x.Ratio = ratio(x.P99US, um.P99US)
				}
				if !isUmstore(x.System) {
					x.Ratio1G = ratio(x.P99US, one.P99US)
				}
				continue
			}
			if !isUmstore(x.System) {
				x.Ratio = ratio(um.MsgsPerS, x.MsgsPerS)
				x.Ratio1G = ratio(one.MsgsPerS, x.MsgsPerS)
			}
		}
	}
	return rows
}

// appendKnown appends v to s unless it is 0, which the runs' /proc readings
// use for "not read": a median over the runs that have one.
func appendKnown(s []float64, v float64) []float64 {
	if v == 0 {
		return s
	}
	return append(s, v)
}

// loadAvg is the 1, 5 and 15 minute load averages: other work on the
// machine (a 2-core machine shows a load of 2 when it is busy).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func describeMachine(dir string) machine {
	m := machine{NProc: runtime.NumCPU(), GOMAXPROC: runtime.GOMAXPROCS(0), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.Memory = strings.Join(strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:], " ")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("df", "-hT", dir).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		m.Disk = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	}
	return m
}

func joinf(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(s, ", ")
}

func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// ratioCell is one of a row's ratios (see row), or — for the system it
// compares with.
func ratioCell(v float64, self bool) string {
	if self {
		return "—"
	}
	if v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", v)
}

// diskCPULegend explains the throughput table's disk and CPU columns.
const diskCPULegend = `Disk bytes ÷ payload: bytes the servers wrote to storage (write_bytes of /proc/PID/io: page-cache pages dirtied, 4 KiB each time, and direct I/O; not the filesystem's journal), all replicas together, from the start of a run until the writes stopped after it, per byte of payload acknowledged; "per store" divides by the copies: 6 for umstore (both groups), 3 for umstore 1 group and JetStream R3. For JetStream default the pages count when they enter the page cache, though they need not be on the device when the ack comes.
CPU s per run: umstore: umstored, all hosts (+ umpub, the client). JetStream: the whole bench process, i.e. its three servers (and the idle other cluster) and the publishers, so it includes the client; compare it with umstore's sum. CPU s per M msgs: the sum (servers and client) per million messages acknowledged.

`

// diskCell is a row's median disk bytes per payload byte, all stores
// together and per store, or n/a.
func diskCell(x row) string {
	if x.WritePerPayload == 0 {
		return "n/a | n/a"
	}
	return fmt.Sprintf("%.2f | %.2f", x.WritePerPayload, x.WritePerPayloadPerStore)
}

// perMillionCell is a row's CPU seconds per million messages, or n/a.
func perMillionCell(x row) string {
	if x.CPUPerMillion == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", x.CPUPerMillion)
}

// cpuCell is a row's median CPU seconds per run: umstored's, with umpub's
// added after "+", or the bench process's (servers and client) for JetStream.
func cpuCell(x row) string {
	switch {
	case x.CPUSeconds == 0:
		return "n/a"
	case isUmstore(x.System) && x.ClientCPUSeconds > 0:
		return fmt.Sprintf("%.2f + %.2f umpub", x.CPUSeconds, x.ClientCPUSeconds)
	case isUmstore(x.System):
		return fmt.Sprintf("%.2f", x.CPUSeconds)
	default:
		return fmt.Sprintf("%.2f incl. client", x.CPUSeconds)
	}
}

func runsCell(x row) string {
	var s []string
	for _, v := range x.Runs {
		s = append(s, fmt.Sprintf("%.0f", v))
	}
	if x.Failed > 0 {
		s = append(s, fmt.Sprintf("%d failed", x.Failed))
	}
	return strings.Join(s, ", ")
}
