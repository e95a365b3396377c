package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// printFixedRate writes the table of latency at fixed rates: a row per
// rate and size, per system its achieved rate and latencies, then
// umstore's p50 and p99 over JetStream's.
func printFixedRate(w io.Writer, r *results) {
	if len(r.FixedRate) == 0 {
		return
	}
	c := r.Config
	systems := fixedRateSystems(c)
	fmt.Fprintln(w, "### Latency at fixed rates")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Offered rate in msgs/s in total over %d publisher(s), window %d per publisher, %.0f s of messages per run (at least 1000), %d runs per (rate, size, system), rotated; medians. "+
		"Both sides time a message from when it was due (start + i × interval at its publisher's rate), not from when it was sent, to its acknowledgement (umstore: stable by intergroup any; JetStream: the R3 stream's ack), so a system that falls behind is charged for it.\n\n",
		c.Sources, c.Flight, c.RateSeconds, c.Runs)
	head, align := []string{"offered msgs/s", "size"}, []string{"---:", "---:"}
	for _, s := range systems {
		head = append(head, s+" msgs/s", "p50 ms", "p99 ms", "p99.9 ms")
		align = append(align, "---:", "---:", "---:", "---:")
	}
	jss := []struct {
		system string
		p50    func(fixedRow) float64
		p99    func(fixedRow) float64
	}{
		{sysJSSync, func(f fixedRow) float64 { return f.P50Ratio }, func(f fixedRow) float64 { return f.P99Ratio }},
		{sysJSDefault, func(f fixedRow) float64 { return f.P50RatioDefault }, func(f fixedRow) float64 { return f.P99RatioDefault }},
	}
	for _, j := range jss {
		if c.has(sysUM) && c.has(j.system) {
			head = append(head, "p50 umstore ÷ "+j.system, "p99 umstore ÷ "+j.system)
			align = append(align, "---:", "---:")
		}
	}
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
	for _, f := range r.FixedRate {
		cells := []string{fmt.Sprintf("%.0f", f.Rate), sizeName(f.Size)}
		for _, s := range systems {
			x := find(f.Systems, f.Size, s)
			if len(x.Runs) == 0 {
				cells = append(cells, failedCell(x), "", "", "")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.0f", x.MsgsPerS), msCell(x.P50US), msCell(x.P99US), msCell(x.P999US))
		}
		for _, j := range jss {
			if c.has(sysUM) && c.has(j.system) {
				cells = append(cells, ratioCell(j.p50(f), false), ratioCell(j.p99(f), false))
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

// failedCell is a system's cell when none of its runs succeeded.
func failedCell(x row) string {
	if x.Failed > 0 {
		return fmt.Sprintf("%d failed", x.Failed)
	}
	return "n/a"
}

// msCell is microseconds as milliseconds, finer below 10 ms.
func msCell(us float64) string {
	switch {
	case math.IsNaN(us):
		return "n/a"
	case us < 10e3:
		return fmt.Sprintf("%.2f", us/1e3)
	}
	return fmt.Sprintf("%.1f", us/1e3)
}

// stageLegend says what the stage table's columns time.
const stageLegend = `Stages (umstored's umstore_publish_stage_seconds, package storegroup/stagetime), per Publish entry on the group leaders (frames the client server merged into one entry count once, timed from the first's read): **queued** read from the connection until proposed; **raft_queue** proposed until appended to the leader's log; **commit** appended until the FSM decided (leader's log write, replication, follower's write, commit); **answer** decided until the answer is written; **total** read until answered. Per batch on every store: **log_write** one write of raft entries, fsync included; **decide** an FSM batch's start until decided; **repo_commit** decided until the repository committed. Each run's own observations (a scrape of /metrics before and after it), all stores that observed the stage summed; quantiles interpolated inside the histogram's buckets (25 µs × 2^k), as Prometheus' histogram_quantile does; medians over the runs. Entries: the run's leader entries timed (total's observations), both groups together.
`

// printStages writes the table of where umstore's time goes: a row per
// rate and size, a p50 / p99 cell per stage.
func printStages(w io.Writer, r *results) {
	if len(r.Stages) == 0 {
		return
	}
	fmt.Fprintln(w, "### Where the time goes (umstore, stage medians)")
	fmt.Fprintln(w)
	fmt.Fprint(w, stageLegend+"\n")
	head := []string{"offered msgs/s", "size", "runs", "entries"}
	for _, s := range stageOrder {
		head = append(head, s+" p50 / p99 ms")
	}
	fmt.Fprintf(w, "| %s |\n|---:|---:|---:|---:|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(stageOrder)))
	for _, x := range r.Stages {
		total, _ := x.stage("total")
		cells := []string{fmt.Sprintf("%.0f", x.Rate), sizeName(x.Size), fmt.Sprint(x.Runs), fmt.Sprintf("%.0f", total.Count)}
		for _, name := range stageOrder {
			s, ok := x.stage(name)
			if !ok {
				cells = append(cells, "n/a")
				continue
			}
			cells = append(cells, fmt.Sprintf("%s / %s", msCell(s.P50US), msCell(s.P99US)))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}
