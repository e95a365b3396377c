package main

import (
	"fmt"
	"io"
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
// computes the ratios against umstore.
func summarize(runs []runResult, sizes []int, half bool) []row {
	var rows []row
	for _, size := range sizes {
		for _, sys := range systems {
			r := row{Size: size, System: sys}
			var mps, mbs, p50, p99, p999, wpp, cpu, ccpu []float64
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
				cpu = appendKnown(cpu, x.CPUSeconds)
				ccpu = appendKnown(ccpu, x.ClientCPUSeconds)
			}
			r.Runs, r.P99Runs = mps, p99
			r.MsgsPerS, r.MBPerS, r.P50US, r.P99US, r.P999US = median(mps), median(mbs), median(p50), median(p99), median(p999)
			r.WritePerPayload, r.CPUSeconds, r.ClientCPUSeconds = median(wpp), median(cpu), median(ccpu)
			rows = append(rows, r)
		}
		um := find(rows, size, sysUM)
		for i := range rows {
			if rows[i].Size != size || rows[i].System == sysUM {
				continue
			}
			if half {
				rows[i].Ratio = ratio(rows[i].P99US, um.P99US)
			} else {
				rows[i].Ratio = ratio(um.MsgsPerS, rows[i].MsgsPerS)
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

func printMarkdown(w io.Writer, r *results) {
	c := r.Config
	fmt.Fprintf(w, "## umstore vs NATS JetStream — %s\n\n", r.Started)
	fmt.Fprintf(w, "umstore revision %s.\n", r.Revision)
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s RAM, kernel %s, %s, disk: `%s`.\n\n", r.Machine.NProc, r.Machine.CPU, r.Machine.Memory, r.Machine.Kernel, r.Machine.Go, r.Machine.Disk)
	fmt.Fprintf(w, "Load average (1/5/15 min) at the start: %s; at the end: %s.\n", r.LoadAvg[0], r.LoadAvg[len(r.LoadAvg)-1])
	fmt.Fprintf(w, "Load: %d messages per run over %d publisher(s), window %d unacknowledged per publisher, %d runs per (size, system), alternating; medians.\n", c.Count, c.Sources, c.Flight, c.Runs)
	extra := ""
	if r.StoreArgs != "" {
		extra = " `" + r.StoreArgs + "` (`--retention-max-bytes 0` keeps everything, as the JetStream streams do)"
	}
	fmt.Fprintf(w, "umstore: `umstored dev`%s (2 groups × 3 stores, one process, fsync before ack, intergroup any), driven by `umpub`. JetStream: 3 embedded servers in one process, R3 file stream, publishing to the stream leader with async publish.\n\n", extra)
	if len(r.Throughput) > 0 {
		fmt.Fprintln(w, "### Throughput (flat out)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| size | system | msgs/s (median) | MB/s | p50 ms | p99 ms | disk bytes ÷ payload | CPU s per run | umstore ÷ this | runs (msgs/s) |")
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, x := range r.Throughput {
			fmt.Fprintf(w, "| %s | %s | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n", sizeName(x.Size), x.System, x.MsgsPerS, x.MBPerS, x.P50US/1e3, x.P99US/1e3, diskCell(x), cpuCell(x), ratioCell(x, false), runsCell(x))
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, diskCPULegend)
		fmt.Fprintln(w, "| size | umstore msgs/s | ÷ JetStream sync_always | ÷ JetStream default |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|")
		for _, size := range c.Sizes {
			fmt.Fprintf(w, "| %s | %.0f | %.2f× | %.2f× |\n", sizeName(size), find(r.Throughput, size, sysUM).MsgsPerS,
				find(r.Throughput, size, sysJSSync).Ratio, find(r.Throughput, size, sysJSDefault).Ratio)
		}
		fmt.Fprintln(w)
	}
	if len(r.HalfLoad) > 0 {
		fmt.Fprintln(w, "### Latency at half of umstore's maximum rate (same offered rate for all)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| size | system | offered msgs/s | achieved msgs/s | p50 ms | p99 ms | p99.9 ms | disk bytes ÷ payload | CPU s per run | p99 this ÷ umstore | runs: achieved msgs/s / p99 ms |")
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, x := range r.HalfLoad {
			var per []string
			for i := range x.Runs {
				per = append(per, fmt.Sprintf("%.0f / %.0f", x.Runs[i], x.P99Runs[i]/1e3))
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n", sizeName(x.Size), x.System, x.Rate, x.MsgsPerS, x.P50US/1e3, x.P99US/1e3, x.P999US/1e3, diskCell(x), cpuCell(x), ratioCell(x, true), strings.Join(per, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Disk bytes ÷ payload and CPU s: as in the throughput table.")
		fmt.Fprintln(w)
	}
	if cu := r.Catchup; cu != nil {
		fmt.Fprintln(w, "### Catch-up of a wiped store host")
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Published %d × %d B (%.0f MB payload per group) to `umstored run` on two hosts (127.0.0.2: G1S1 G1S2 G2S1, 127.0.0.3: G1S3 G2S2 G2S3); killed host A with SIGKILL, deleted its data directory, restarted it.\n\n", cu.Messages, cu.MessageSize, cu.PublishedMB)
		fmt.Fprintln(w, "| what | value |")
		fmt.Fprintln(w, "|---|---:|")
		fmt.Fprintf(w, "| disk sequential write (%d MiB + fsync, same filesystem; median of %s) | %.0f MB/s |\n", cu.DiskTestMB, joinf(cu.DiskRuns), cu.DiskWriteMBps)
		fmt.Fprintf(w, "| restart → all 3 of A's stores caught up | %.1f s |\n", cu.WallS)
		fmt.Fprintf(w, "| payload restored (all of A's stores) | %.0f MB → %.1f MB/s (%.2f of disk) |\n", cu.RestoredMB, cu.PayloadMBps, ratio(cu.PayloadMBps, cu.DiskWriteMBps))
		fmt.Fprintf(w, "| A's data directory afterwards | %.0f MB → %.1f MB/s written (%.2f of disk) |\n", cu.RestoredDiskMB, cu.DiskMBps, ratio(cu.DiskMBps, cu.DiskWriteMBps))
		for _, s := range cu.Stores {
			fmt.Fprintf(w, "| %s (group %d): %.0f MB, from %.1f s to %.1f s | %.1f MB/s (%.2f of disk) |\n", s.Name, s.Group, s.PayloadMB, s.StartS, s.DoneS, s.MBps, ratio(s.MBps, cu.DiskWriteMBps))
		}
		fmt.Fprintln(w)
	}
	if m := r.Memory; m != nil {
		fmt.Fprintln(w, "### Resident memory of umstored dev while retaining")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| retained payload per group (MB) | RSS (MB) | of which anonymous | of which mapped files | Go heap in use (MB) | data directory, 6 stores (MB) |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
		for _, s := range m.Steps {
			fmt.Fprintf(w, "| %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", s.RetainedMB, s.RSSMB, s.AnonMB, s.FileMB, s.HeapMB, s.DiskMB)
		}
		fmt.Fprintln(w)
	}
	if r.Profile != "" {
		fmt.Fprintf(w, "### CPU profile of umstored (%s, first size)\n\n```\n%s```\n\n", c.CPUProfile, r.Profile)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n\n", n)
	}
	var failed []string
	for _, x := range append(append([]runResult{}, r.Runs...), r.HalfRuns...) {
		if x.Error != "" {
			failed = append(failed, fmt.Sprintf("run %d %s %d B: %s", x.Run, x.System, x.Size, x.Error))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "Failed runs (left out of the medians):\n\n- %s\n\n", strings.Join(failed, "\n- "))
	}
	fmt.Fprintf(w, "Total time %.0f s.\n", r.ElapsedS)
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

func ratioCell(x row, half bool) string {
	if x.System == sysUM {
		return "—"
	}
	if x.Ratio == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", x.Ratio)
}

// diskCPULegend explains the throughput table's disk and CPU columns.
const diskCPULegend = `Disk bytes ÷ payload: bytes the servers wrote to storage (write_bytes of /proc/PID/io: page-cache pages dirtied, 4 KiB each time, and direct I/O; not the filesystem's journal), all replicas together, from the start of a run until the writes stopped after it, per byte of payload acknowledged. umstore keeps every message in both groups (6 copies), JetStream R3 in 3. For JetStream default the pages count when they enter the page cache, though they need not be on the device when the ack comes.
CPU s per run: umstore: umstored (+ umpub, the client). JetStream: the whole bench process, i.e. its three servers (and the idle other cluster) and the publishers, so it includes the client; compare it with umstore's sum.

`

// diskCell is a row's median disk bytes per payload byte, or n/a.
func diskCell(x row) string {
	if x.WritePerPayload == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", x.WritePerPayload)
}

// cpuCell is a row's median CPU seconds per run: umstored's, with umpub's
// added after "+", or the bench process's (servers and client) for JetStream.
func cpuCell(x row) string {
	switch {
	case x.CPUSeconds == 0:
		return "n/a"
	case x.System == sysUM && x.ClientCPUSeconds > 0:
		return fmt.Sprintf("%.2f + %.2f umpub", x.CPUSeconds, x.ClientCPUSeconds)
	case x.System == sysUM:
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
