package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Throughput with many sources (issue 26): umstore (umstored dev) flat
// out with umpub --sources K for each K of --sources-list, --sources-count
// messages in all per run (so count/K per source), each source its own
// publisher with a window of --flight, --sources-size bytes. umpub caps K;
// a K it refuses becomes a note naming its limit.

// sourcesRow is the medians over the runs of one K.
type sourcesRow struct {
	Sources  int     `json:"sources"`
	Messages int     `json:"messages"` // per run, all sources together
	MsgsPerS float64 `json:"median_msgs_per_s"`
	P50US    float64 `json:"median_p50_us"`
	P99US    float64 `json:"median_p99_us"`
	// RegisterS is the median time the K sources took to register, before
	// any sent: not in MsgsPerS's span.
	RegisterS float64   `json:"median_register_s"`
	OverOne   float64   `json:"over_k1,omitempty"` // MsgsPerS ÷ K=1's (0: K=1 not measured)
	Runs      []float64 `json:"runs_msgs_per_s"`
	Failed    int       `json:"failed_runs,omitempty"`
	// Refused is umpub's refusal of this K (then nothing else is set).
	Refused string `json:"refused,omitempty"`
}

// sourcesRuns makes the runs of the sources table, the Ks in turn per
// repetition, and fills res.Sources.
func (t *throughputRig) sourcesRuns(ctx context.Context, c config, res *results) error {
	if t.dev == nil {
		res.Notes = append(res.Notes, "sources table: needs --systems with umstore (umstored dev)")
		return nil
	}
	refused := map[int]string{}
	for _, k := range c.SourcesList {
		if msg := umpubRefuses(ctx, t.bins, k); msg != "" {
			refused[k] = msg
			res.Notes = append(res.Notes, fmt.Sprintf("sources table: umpub refuses --sources %d (%s): not measured", k, msg))
		}
	}
	for i := 0; i < c.Runs; i++ {
		for _, k := range c.SourcesList {
			if refused[k] != "" {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			l := load{size: c.SourcesSize, count: max(k, c.SourcesCount), sources: k, flight: c.Flight, payload: c.Payload, connections: c.SourcesConnections}
			r := t.runOne(ctx, sysUM, l, i+1)
			r.Sources = k
			res.SourcesRuns = append(res.SourcesRuns, r)
		}
	}
	res.Sources = summarizeSources(res.SourcesRuns, c.SourcesList, refused)
	return nil
}

// summarizeSources takes the medians per K and the ratios to K=1.
func summarizeSources(runs []runResult, ks []int, refused map[int]string) []sourcesRow {
	var rows []sourcesRow
	for _, k := range ks {
		r := sourcesRow{Sources: k, Refused: refused[k]}
		var mps, p50, p99, reg []float64
		for _, x := range runs {
			if x.Sources != k {
				continue
			}
			if x.Error != "" {
				r.Failed++
				continue
			}
			r.Messages = x.Messages
			mps, p50, p99 = append(mps, x.MsgsPerS), append(p50, float64(x.LatencyUS.P50)), append(p99, float64(x.LatencyUS.P99))
			reg = append(reg, x.RegisterS)
		}
		r.Runs, r.MsgsPerS, r.P50US, r.P99US, r.RegisterS = mps, median(mps), median(p50), median(p99), median(reg)
		rows = append(rows, r)
	}
	one := findSources(rows, 1)
	for i := range rows {
		rows[i].OverOne = ratio(rows[i].MsgsPerS, one.MsgsPerS)
	}
	return rows
}

// findSources returns the row of K sources, or the zero row.
func findSources(rows []sourcesRow, k int) sourcesRow {
	for _, r := range rows {
		if r.Sources == k {
			return r
		}
	}
	return sourcesRow{}
}

// umpubRefuses asks umpub whether it takes --sources k: it checks its
// flags before it reads a deployment, so a run without one fails on
// --sources if k is too many, and on the missing stores if not. It
// returns umpub's message when it refuses k, else "".
func umpubRefuses(ctx context.Context, b umBins, k int) string {
	cmd := exec.CommandContext(ctx, b.umpub, "--source", "probe", "--sources", strconv.Itoa(k), "--count", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		return ""
	}
	msg := strings.TrimSpace(stderr.String())
	if !strings.Contains(msg, "--sources") {
		return ""
	}
	return strings.TrimPrefix(msg, "umpub: ")
}

// printSources writes the sources table: a row per K.
func printSources(w io.Writer, r *results) {
	if len(r.Sources) == 0 {
		return
	}
	c := r.Config
	fmt.Fprintln(w, "### Throughput with K sources (umstore, umstored dev)")
	fmt.Fprintln(w)
	conns := c.SourcesConnections
	if conns == "" {
		conns = "shared"
	}
	fmt.Fprintf(w, "umpub --sources K --connections %s, flat out: %d messages of %s per run in all (count ÷ K per source), each source its own publisher with a window of %d; %d runs per K; medians. Every source registers before any sends: msgs/s is over the sending, and the registrations' span is its own column.\n\n",
		conns, c.SourcesCount, sizeName(c.SourcesSize), c.Flight, c.Runs)
	fmt.Fprintln(w, "| K | msgs/s | ÷ K=1 | p50 ms | p99 ms | registering s | runs (msgs/s) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|")
	for _, x := range r.Sources {
		if x.Refused != "" {
			fmt.Fprintf(w, "| %d | refused by umpub: %s | | | | | |\n", x.Sources, x.Refused)
			continue
		}
		runs := joinf(x.Runs)
		if x.Failed > 0 {
			runs = strings.TrimPrefix(runs+fmt.Sprintf(", %d failed", x.Failed), ", ")
		}
		fmt.Fprintf(w, "| %d | %.0f | %s | %s | %s | %.2f | %s |\n", x.Sources, x.MsgsPerS, ratioCell(x.OverOne, x.Sources == 1), msCell(x.P50US), msCell(x.P99US), x.RegisterS, runs)
	}
	fmt.Fprintln(w)
}
