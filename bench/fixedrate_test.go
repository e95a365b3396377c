package main

import (
	"bytes"
	"strings"
	"testing"
)

// fixedRuns is one run per system at rate and 1 KiB with these p50 and
// p99 in microseconds: umstore's, then JetStream sync_always's.
func fixedRuns(rate float64, um, js [2]int64) []runResult {
	mk := func(sys string, l [2]int64) runResult {
		return runResult{System: sys, Size: 1024, Run: 1, Rate: rate, Messages: 1000, MsgsPerS: rate, LatencyUS: Latency{P50: l[0], P99: l[1]}}
	}
	return []runResult{mk(sysUM, um), mk(sysJSSync, js)}
}

func TestFixedRateGoals(t *testing.T) {
	var runs []runResult
	runs = append(runs, fixedRuns(1000, [2]int64{800, 4000}, [2]int64{2000, 10000})...)  // 0.4×, 0.4×: met; and under 1 ms / 5 ms
	runs = append(runs, fixedRuns(10000, [2]int64{900, 6000}, [2]int64{2000, 10000})...) // p99 0.6×: not met
	rates, systems := []float64{1000, 10000}, []string{sysUM, sysJSSync}
	r := &results{Config: config{Systems: systems, Sizes: []int{1024}, Rates: rates, Runs: 1, Sources: 1, Flight: 4096, RateSeconds: 5}}
	r.FixedRuns, r.FixedRate = runs, summarizeFixed(runs, rates, []int{1024}, systems)
	r.Sources = summarizeSources([]runResult{
		{System: sysUM, Sources: 1, Size: 64, MsgsPerS: 100e3, Messages: 200000},
		{System: sysUM, Sources: 1000, Size: 64, MsgsPerS: 85e3, Messages: 200000},
	}, []int{1, 1000, 10000}, map[int]string{10000: "--sources must be 1..1000, got 10000"})

	if f := findFixed(r.FixedRate, 10000, 1024); f.P50Ratio != 0.45 || f.P99Ratio != 0.6 {
		t.Errorf("ratios at 10000 msgs/s: p50 %v, p99 %v, want 0.45 and 0.6", f.P50Ratio, f.P99Ratio)
	}
	got := map[string]goal{}
	for _, g := range computeGoals(r) {
		got[g.Figure] = g
	}
	for _, tc := range []struct{ figure, met, measured string }{
		{"1 KiB at 1,000 msgs/s, umstored dev", "yes", "p50 0.80 ms, p99 4.00 ms"},
		{"1 KiB at 1,000 msgs/s: umstore's p50 and p99 vs JetStream R3 `sync_always`", "yes", "p50 0.40×"},
		{"1 KiB at 10,000 msgs/s: umstore's p50 and p99 vs JetStream R3 `sync_always`", "no", "p99 0.60×"},
		{"throughput with K=1,000 sources ÷ K=1, umstored dev", "yes", "0.85"},
		{"throughput with K=10,000 sources ÷ K=1, umstored dev", "n/a", "umpub refuses --sources 10000"},
	} {
		g, ok := got[tc.figure]
		if !ok || g.Met != tc.met || !strings.Contains(g.Measured, tc.measured) {
			t.Errorf("goal %q = %+v, want met %s, measured with %q", tc.figure, g, tc.met, tc.measured)
		}
	}

	var buf bytes.Buffer
	r.LoadAvg = []string{"0 0 0"}
	printMarkdown(&buf, r)
	for _, want := range []string{"### Latency at fixed rates", "| 10000 | 1 KiB | 10000 | 0.90 | 6.00 |", "### Throughput with K sources", "| 10000 | refused by umpub"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestParseLoads(t *testing.T) {
	for _, tc := range []struct {
		rates, sources   string
		seconds          float64
		wantErr          string
		wantRates, wantK int
	}{
		{rates: "1000,10000,50000", sources: "1, 100,1000", seconds: 5, wantRates: 3, wantK: 3},
		{rates: "", sources: "", seconds: 5},
		{rates: "1000,fast", seconds: 5, wantErr: "--rates"},
		{rates: "0", seconds: 5, wantErr: "--rates"},
		{rates: "1000", seconds: 0, wantErr: "--rate-seconds"},
		{sources: "1,0", wantErr: "--sources-list"},
	} {
		c := config{RateSeconds: tc.seconds, SourcesCount: 200000, SourcesSize: 64}
		msg := c.parseLoads(tc.rates, tc.sources)
		switch {
		case tc.wantErr == "" && msg != "":
			t.Errorf("%q %q: %s", tc.rates, tc.sources, msg)
		case tc.wantErr != "" && !strings.Contains(msg, tc.wantErr):
			t.Errorf("%q %q: error %q, want one about %s", tc.rates, tc.sources, msg, tc.wantErr)
		case tc.wantErr == "" && (len(c.Rates) != tc.wantRates || len(c.SourcesList) != tc.wantK):
			t.Errorf("%q %q: %d rates, %d Ks", tc.rates, tc.sources, len(c.Rates), len(c.SourcesList))
		}
	}
}

func TestNeeds(t *testing.T) {
	all := []string{sysUM, sysUM1, sysJSSync, sysJSDefault}
	for _, tc := range []struct {
		name string
		c    config
		want []string // the systems started
	}{
		{"throughput: every system", config{Systems: all, Throughput: true}, all},
		{"fixed rates: every system", config{Systems: all, Rates: []float64{1000}}, all},
		{"sources: umstore", config{Systems: all, SourcesList: []int{1}}, []string{sysUM}},
		{"only what --systems has", config{Systems: []string{sysJSSync}, SourcesList: []int{1}}, nil},
	} {
		var got []string
		for _, s := range all {
			if tc.c.needs(s) {
				got = append(got, s)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: started %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSummarizeStages(t *testing.T) {
	runs := []stageRun{
		{Rate: 1000, Size: 64, Run: 1, Stages: []stageStat{{"commit", 100, 300, 900}, {"total", 100, 400, 1000}}},
		{Rate: 1000, Size: 64, Run: 2, Stages: []stageStat{{"commit", 120, 500, 1100}}},
		{Rate: 1000, Size: 64, Run: 3, Stages: []stageStat{{"commit", 110, 400, 2000}, {"total", 110, 600, 3000}}},
	}
	rows := summarizeStages(runs, []float64{1000, 5000}, []int{64})
	if len(rows) != 1 || rows[0].Runs != 3 {
		t.Fatalf("rows %+v, want one of 3 runs", rows)
	}
	for _, tc := range []struct {
		stage    string
		want     stageStat
		observed bool
	}{
		{"commit", stageStat{"commit", 110, 400, 1100}, true},
		{"total", stageStat{"total", 105, 500, 2000}, true}, // median of the two runs that observed it
		{"queued", stageStat{}, false},
	} {
		got, ok := rows[0].stage(tc.stage)
		if ok != tc.observed || got != tc.want {
			t.Errorf("%s: %+v (%v), want %+v (%v)", tc.stage, got, ok, tc.want, tc.observed)
		}
	}
}
