package main

import (
	"fmt"
	"io"
	"strings"
)

// printMarkdown writes the results as the Markdown BENCH.md quotes: the
// setup, one table per measurement, and the goals last.
func printMarkdown(w io.Writer, r *results) {
	c := r.Config
	fmt.Fprintf(w, "## umstore vs NATS JetStream — %s\n\n", r.Started)
	fmt.Fprintf(w, "umstore revision %s.\n", r.Revision)
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s RAM, kernel %s, %s, disk: `%s`.\n\n", r.Machine.NProc, r.Machine.CPU, r.Machine.Memory, r.Machine.Kernel, r.Machine.Go, r.Machine.Disk)
	fmt.Fprintf(w, "Load average (1/5/15 min) at the start: %s; at the end: %s.\n", r.LoadAvg[0], r.LoadAvg[len(r.LoadAvg)-1])
	if c.Throughput {
		fmt.Fprintf(w, "Load: %d messages per run over %d publisher(s), window %d unacknowledged per publisher, %d runs per (size, system), alternating; medians.\n", c.Count, c.Sources, c.Flight, c.Runs)
	}
	if c.Payload == payloadRandom {
		fmt.Fprintf(w, "Payloads: fresh random bytes for every message on both sides (nothing compresses; JetStream's stream compression is off, its default); umpub gets them through %s.\n", r.UmpubPayload)
	} else {
		fmt.Fprintln(w, "Payloads: text (umpub's \"SOURCE #SEQ ....\", dots for JetStream), compressible; neither system compresses.")
	}
	extra := ""
	if r.StoreArgs != "" {
		extra = " `" + r.StoreArgs + "` (`--retention-max-bytes 0` keeps everything, as the JetStream streams do)"
	}
	fmt.Fprintf(w, "umstore: every `umstored dev` and `umstored run`%s, fsync before ack, driven by `umpub`. **umstore** is `umstored dev` (2 groups × 3 stores in one process, intergroup any); **umstore 1 group** is %s, three `umstored run` processes. JetStream: 3 embedded servers in one process, R3 file stream, publishing to the stream leader with async publish.\n\n", extra, oneGroup.What)
	printThroughput(w, r)
	printHalfLoad(w, r)
	printFixedRate(w, r)
	printStages(w, r)
	printSources(w, r)
	for _, cu := range r.Catchup {
		printCatchup(w, cu)
	}
	printMemory(w, r.Memory)
	printSoak(w, r.Soak)
	for _, p := range r.Profiles {
		fmt.Fprintf(w, "### CPU profile of %s at %s (`%s`)\n\n```\n%s```\n\n", p.System, sizeName(p.Size), p.File, p.Top)
	}
	if len(r.Goals) > 0 {
		fmt.Fprintln(w, "### Goals (issues 15 and 26) in this run")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| figure | goal | measured | met? |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, g := range r.Goals {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", g.Figure, g.Goal, g.Measured, g.Met)
		}
		fmt.Fprintln(w)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n\n", n)
	}
	var failed []string
	all := append(append(append(append([]runResult{}, r.Runs...), r.HalfRuns...), r.FixedRuns...), r.SourcesRuns...)
	for _, x := range all {
		if x.Error != "" {
			what := ""
			switch {
			case x.Sources > 0:
				what = fmt.Sprintf(" K=%d", x.Sources)
			case x.Rate > 0:
				what = fmt.Sprintf(" at %.0f msgs/s", x.Rate)
			}
			failed = append(failed, fmt.Sprintf("run %d %s %d B%s: %s", x.Run, x.System, x.Size, what, x.Error))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "Failed runs (left out of the medians):\n\n- %s\n\n", strings.Join(failed, "\n- "))
	}
	fmt.Fprintf(w, "Total time %.0f s.\n", r.ElapsedS)
}

func printThroughput(w io.Writer, r *results) {
	if len(r.Throughput) == 0 {
		return
	}
	c := r.Config
	fmt.Fprintln(w, "### Throughput (flat out)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| size | system | copies | msgs/s (median) | MB/s | p50 ms | p99 ms | disk bytes ÷ payload | per store | CPU s per run | CPU s per M msgs | umstore ÷ this | umstore 1 group ÷ this | runs (msgs/s) |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, x := range r.Throughput {
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", sizeName(x.Size), x.System, x.Stores, x.MsgsPerS, x.MBPerS,
			x.P50US/1e3, x.P99US/1e3, diskCell(x), cpuCell(x), perMillionCell(x),
			ratioCell(x.Ratio, isUmstore(x.System)), ratioCell(x.Ratio1G, isUmstore(x.System)), runsCell(x))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, diskCPULegend)
	fmt.Fprintln(w, "| size | umstore msgs/s | ÷ JetStream sync_always | ÷ JetStream default | umstore 1 group msgs/s | ÷ JetStream sync_always | ÷ JetStream default |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
	for _, size := range c.Sizes {
		s, d := find(r.Throughput, size, sysJSSync), find(r.Throughput, size, sysJSDefault)
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %.0f | %s | %s |\n", sizeName(size),
			find(r.Throughput, size, sysUM).MsgsPerS, ratioCell(s.Ratio, false), ratioCell(d.Ratio, false),
			find(r.Throughput, size, sysUM1).MsgsPerS, ratioCell(s.Ratio1G, false), ratioCell(d.Ratio1G, false))
	}
	fmt.Fprintln(w)
}

func printHalfLoad(w io.Writer, r *results) {
	if len(r.HalfLoad) == 0 {
		return
	}
	fmt.Fprintln(w, "### Latency at half of umstore's maximum rate (same offered rate for all)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| size | system | offered msgs/s | achieved msgs/s | p50 ms | p99 ms | p99.9 ms | disk bytes ÷ payload | per store | CPU s per run | CPU s per M msgs | p99 this ÷ umstore | p99 this ÷ umstore 1 group | runs: achieved msgs/s / p99 ms |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, x := range r.HalfLoad {
		var per []string
		for i := range x.Runs {
			per = append(per, fmt.Sprintf("%.0f / %.0f", x.Runs[i], x.P99Runs[i]/1e3))
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", sizeName(x.Size), x.System, x.Rate, x.MsgsPerS,
			x.P50US/1e3, x.P99US/1e3, x.P999US/1e3, diskCell(x), cpuCell(x), perMillionCell(x),
			ratioCell(x.Ratio, x.System == sysUM), ratioCell(x.Ratio1G, isUmstore(x.System)), strings.Join(per, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Disk bytes ÷ payload and CPU s: as in the throughput table. Latency on both sides from when each message was due at the offered rate, not from its send (see the fixed-rate table).")
	fmt.Fprintln(w)
}

func printCatchup(w io.Writer, cu *catchupResult) {
	fmt.Fprintf(w, "### Catch-up of a wiped store (%s)\n\n", cu.Layout)
	fmt.Fprintf(w, "Published %d × %d B (%s payloads, %.0f MB per group) to %s; then killed host %s with SIGKILL, deleted its data directory, restarted it.\n\n",
		cu.Messages, cu.MessageSize, cu.Payload, cu.PublishedMB, cu.What, cu.WipedHost)
	fmt.Fprintln(w, "| what | value |")
	fmt.Fprintln(w, "|---|---:|")
	if d := cu.Disk; d != nil {
		fmt.Fprintf(w, "| disk sequential write, just before the wipe (%d MiB in 1 MiB writes + one fdatasync, as `dd bs=1M conv=fdatasync`, same filesystem; median of %s) | **%.0f MB/s** |\n", d.MiB, joinf(d.SeqRuns), d.SeqMBps)
		fmt.Fprintf(w, "| the same with an fdatasync after every 1 MiB (`dd bs=1M oflag=dsync`) | %.0f MB/s |\n", d.DsyncMBps)
		fmt.Fprintf(w, "| 4 KiB writes, each followed by fdatasync (`dd bs=4k oflag=dsync`) | %.0f per s |\n", d.Sync4KPerS)
		if d.CopyMBps > 0 {
			fmt.Fprintf(w, "| a bare copy: %d MiB read from a file (not cached), sent over loopback TCP, written to a new file, one fdatasync; nothing else (median of %s) | %.0f MB/s (**%.2f of disk**: the most a catch-up could reach here) |\n", d.MiB, joinf(d.CopyRuns), d.CopyMBps, ratio(d.CopyMBps, d.SeqMBps))
		}
	}
	fmt.Fprintf(w, "| restart → all %d of %s's stores caught up | %.1f s |\n", len(cu.Stores), cu.WipedHost, cu.WallS)
	fmt.Fprintf(w, "| payload restored (all of %s's stores) | %.0f MB → %.1f MB/s (%.2f of disk) |\n", cu.WipedHost, cu.RestoredMB, cu.PayloadMBps, ratio(cu.PayloadMBps, cu.DiskWriteMBps))
	fmt.Fprintf(w, "| %s's data directory afterwards | %.0f MB → %.1f MB/s written (%.2f of disk) |\n", cu.WipedHost, cu.RestoredDiskMB, cu.DiskMBps, ratio(cu.DiskMBps, cu.DiskWriteMBps))
	for _, s := range cu.Stores {
		fmt.Fprintf(w, "| %s (group %d): %.0f MB, from %.1f s to %.1f s | %.1f MB/s (**%.2f of disk**) |\n", s.Name, s.Group, s.PayloadMB, s.StartS, s.DoneS, s.MBps, s.OfDisk)
	}
	fmt.Fprintln(w)
}

func printMemory(w io.Writer, m *memoryResult) {
	if m == nil {
		return
	}
	fmt.Fprintln(w, "### Resident memory of umstored dev (six stores in one process) while retaining")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| retained payload per group (MB) | umstored RSS (MB) | peak so far (VmHWM) | of which anonymous | of which mapped files | Go heap in use (MB) | data directory, 6 stores (MB) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range m.Steps {
		fmt.Fprintf(w, "| %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", s.RetainedMB, s.RSSMB, s.PeakMB, s.AnonMB, s.FileMB, s.HeapMB, s.DiskMB)
	}
	fmt.Fprintln(w)
	if n := len(m.Steps); n > 0 {
		fmt.Fprintf(w, "**umstored RSS after retaining %.0f MB per group: %.0f MB** (goal ≤ 300 MB); highest RSS during the test %.0f MB. %s payloads; %s.\n\n",
			m.Steps[n-1].RetainedMB, m.FinalRSSMB, m.PeakRSSMB, m.Payload, m.Note)
	}
}

func printSoak(w io.Writer, s *soakResult) {
	if s == nil {
		return
	}
	how := "flat out"
	if s.Rate > 0 {
		how = fmt.Sprintf("at %.0f msgs/s", s.Rate)
	}
	fmt.Fprintf(w, "### Soak: %.0f s of %d B messages %s, retention %d bytes per source\n\n", s.DurationS, s.Size, how, s.RetentionBytes)
	if s.Stopped != "" {
		fmt.Fprintf(w, "**The soak %s.**\n\n", s.Stopped)
	}
	fmt.Fprintf(w, "`umstored dev %s`; %s payloads; %s.\n\n", s.StoreArgs, s.Payload, s.Note)
	fmt.Fprintln(w, "| from s | msgs/s | MB/s | p50 ms | p99 ms | disk MB (end) | disk MB (peak) | by kind (MB) | retained MB | RSS MB | RSS peak MB | Go heap MB | umstored CPU s | disk B ÷ payload B per store |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range s.Chunks {
		errNote := ""
		if c.Error != "" {
			errNote = " (" + c.Error + ")"
		}
		fmt.Fprintf(w, "| %.0f | %.0f%s | %.1f | %.1f | %.1f | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %.1f | %.2f |\n", c.StartS, c.MsgsPerS, errNote, c.MBPerS,
			float64(c.P50US)/1e3, float64(c.P99US)/1e3, c.DiskMB, c.DiskPeakMB, kindsText(c.DiskByKind), c.RetainedMB, c.RSSMB, c.RSSPeakChunkMB, c.HeapMB, c.CPUSeconds, c.WritePerPayloadPerStore)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Throughput at the end %.0f msgs/s vs %.0f at the start: **%.2f** (goal ≥ 0.90). Disk use peak %.0f MB (first third %.0f, last third %.0f); RSS peak %.0f MB.\n\n",
		s.EndMsgsPerS, s.StartMsgsPerS, s.EndOverStart, s.DiskPeakMB, s.DiskFirstThirdPeakMB, s.DiskLastThirdPeakMB, s.RSSPeakMB)
}
