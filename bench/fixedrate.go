package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Latency at fixed offered rates (issue 26): every system of the
// comparison at each of --rates (msgs/s in total) and each size, for about
// --rate-seconds of messages, timed on both sides from when each message
// was due, so that a system that falls behind its rate is charged for it:
// umpub at --rate times from the due time (cmd/umpub/recorder.go), and
// publishJS does the same (jetstream.go). umstore's runs also read the
// stores' stage histograms (stages.go).

// fixedRateSystems are the systems of c that the fixed-rate table compares:
// all of them (umstore 1 group too: three servers, as JetStream R3 has).
func fixedRateSystems(c config) []string { return c.Systems }

// fixedRateCount is the messages of one run at rate: seconds of them, at
// least 1000 and at least one per source.
func fixedRateCount(rate, seconds float64, sources int) int {
	return max(1000, sources, int(rate*seconds))
}

// fixedRateRuns makes the fixed-rate runs: per repetition, size and rate,
// the systems in the rotation of the half-load runs. umstore's runs are
// bracketed by scrapes of its stage histograms.
func (t *throughputRig) fixedRateRuns(ctx context.Context, c config, res *results) error {
	systems := fixedRateSystems(c)
	n := len(systems)
	stagesOK := t.dev != nil
	for i := 0; i < c.Runs; i++ {
		for _, size := range c.Sizes {
			for _, rate := range c.Rates {
				l := load{size: size, count: fixedRateCount(rate, c.RateSeconds, c.Sources), sources: c.Sources, flight: c.Flight, rate: rate, payload: c.Payload}
				for k := range n {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					sys := systems[(k+i)%n]
					if sys != sysUM || !stagesOK {
						res.FixedRuns = append(res.FixedRuns, t.runOne(ctx, sys, l, i+1))
						continue
					}
					before, err := scrapeStages(ctx, t.dev.admin)
					r := t.runOne(ctx, sys, l, i+1)
					res.FixedRuns = append(res.FixedRuns, r)
					if err == nil {
						var after stageScrape
						if after, err = scrapeStages(ctx, t.dev.admin); err == nil && r.Error == "" {
							res.StageRuns = append(res.StageRuns, stageRun{Rate: rate, Size: size, Run: i + 1, Stages: stageStats(before, after)})
						}
					}
					if err != nil {
						stagesOK = false
						if errors.Is(err, errNoStages) {
							res.Notes = append(res.Notes, "stage breakdown: umstored's /metrics has no "+stageMetric+" (an umstored older than its stage timers): no table of where the time goes")
						} else {
							res.Notes = append(res.Notes, fmt.Sprintf("stage breakdown: %v; no table of where the time goes", err))
						}
					}
				}
			}
		}
	}
	res.FixedRate = summarizeFixed(res.FixedRuns, c.Rates, c.Sizes, systems)
	if stagesOK {
		res.Stages = summarizeStages(res.StageRuns, c.Rates, c.Sizes)
	}
	return nil
}

// fixedRow is one rate and size of the fixed-rate table: every system's
// medians (row, as the half-load table's) and umstore's latency over
// JetStream's.
type fixedRow struct {
	Rate    float64 `json:"offered_msgs_per_s"`
	Size    int     `json:"size"`
	Systems []row   `json:"systems"`
	// P50Ratio and P99Ratio are umstore's median p50 and p99 over
	// JetStream sync_always's (< 1: umstore's is lower; 0: not measured);
	// the Default ones over JetStream default's.
	P50Ratio        float64 `json:"umstore_over_js_sync_p50,omitempty"`
	P99Ratio        float64 `json:"umstore_over_js_sync_p99,omitempty"`
	P50RatioDefault float64 `json:"umstore_over_js_default_p50,omitempty"`
	P99RatioDefault float64 `json:"umstore_over_js_default_p99,omitempty"`
}

// summarizeFixed takes the medians per rate, size and system.
func summarizeFixed(runs []runResult, rates []float64, sizes []int, systems []string) []fixedRow {
	var out []fixedRow
	for _, rate := range rates {
		var at []runResult
		for _, r := range runs {
			if r.Rate == rate {
				at = append(at, r)
			}
		}
		rows := summarize(at, sizes, systems, true)
		for _, size := range sizes {
			f := fixedRow{Rate: rate, Size: size}
			for _, r := range rows {
				if r.Size == size {
					r.Rate = rate
					f.Systems = append(f.Systems, r)
				}
			}
			um, s, d := find(rows, size, sysUM), find(rows, size, sysJSSync), find(rows, size, sysJSDefault)
			f.P50Ratio, f.P99Ratio = ratio(um.P50US, s.P50US), ratio(um.P99US, s.P99US)
			f.P50RatioDefault, f.P99RatioDefault = ratio(um.P50US, d.P50US), ratio(um.P99US, d.P99US)
			out = append(out, f)
		}
	}
	return out
}

// findFixed returns the row of one rate and size, or the zero row.
func findFixed(rows []fixedRow, rate float64, size int) fixedRow {
	for _, r := range rows {
		if r.Rate == rate && r.Size == size {
			return r
		}
	}
	return fixedRow{}
}

// parseLoads checks --rates and --sources-list and fills the config's
// lists (clearing what goes with a list left empty); it returns what is
// wrong, or "".
func (c *config) parseLoads(rates, sourcesList string) string {
	for _, f := range splitList(rates) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return fmt.Sprintf("--rates: %q is not a positive rate in msgs/s", f)
		}
		c.Rates = append(c.Rates, v)
	}
	for _, f := range splitList(sourcesList) {
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 {
			return fmt.Sprintf("--sources-list: %q is not a positive number of sources", f)
		}
		c.SourcesList = append(c.SourcesList, k)
	}
	switch {
	case len(c.Rates) > 0 && c.RateSeconds <= 0:
		return "--rate-seconds must be positive"
	case len(c.SourcesList) > 0 && (c.SourcesCount < 1 || c.SourcesSize < 8 || c.SourcesSize > 1<<20):
		return "--sources-count must be positive and --sources-size 8 bytes to 1 MiB"
	}
	if len(c.Rates) == 0 {
		c.RateSeconds = 0
	}
	if len(c.SourcesList) == 0 {
		c.SourcesCount, c.SourcesSize = 0, 0
	}
	return ""
}

// splitList is the comma-separated fields of s, trimmed; none for "".
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
