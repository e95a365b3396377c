package main

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 10 observations <= 1, 10 in (1,2], 10 in (2,4], none above.
	three := []bucket{{1, 10}, {2, 20}, {4, 30}, {inf, 30}}
	for _, tc := range []struct {
		name string
		q    float64
		bs   []bucket
		want float64 // NaN: no answer
	}{
		{"median inside the second bucket", 0.5, three, 1.5},
		{"p99 inside the third bucket", 0.99, three, 2 + 2*9.7/10},
		{"first bucket from 0", 0.5, []bucket{{1, 10}, {inf, 10}}, 0.5},
		{"upper edge of a bucket", 2.0 / 3, three, 2},
		{"in +Inf: the highest finite bound", 0.9, []bucket{{1, 10}, {inf, 20}}, 1},
		{"empty bucket skipped", 0.75, []bucket{{1, 10}, {2, 10}, {4, 20}, {inf, 20}}, 3},
		{"nothing observed", 0.5, []bucket{{1, 0}, {inf, 0}}, math.NaN()},
		{"no +Inf bucket", 0.5, []bucket{{1, 10}}, math.NaN()},
		{"no buckets", 0.5, nil, math.NaN()},
	} {
		got := bucketQuantile(tc.q, tc.bs)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("%s: bucketQuantile(%v) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
}

// metricsText is /metrics with two stores' commit histograms (buckets of
// 1 ms and 2 ms; n1 and n2 observations in each) and one store's
// log_write (lw observations, all <= 1 ms).
func metricsText(n1, n2, lw float64) string {
	var b strings.Builder
	b.WriteString("# HELP umstore_publish_stage_seconds Time...\n# TYPE umstore_publish_stage_seconds histogram\n")
	line := func(store, stage, le string, v float64) {
		b.WriteString(`umstore_publish_stage_seconds_bucket{group="1",stage="` + stage + `",store="` + store + `",le="` + le + `"} ` + ftoa(v) + "\n")
	}
	line("G1S1", "commit", "0.001", n1)
	line("G1S1", "commit", "0.002", 2*n1)
	line("G1S1", "commit", "+Inf", 2*n1)
	line("G2S1", "commit", "0.001", n2)
	line("G2S1", "commit", "0.002", 2*n2)
	line("G2S1", "commit", "+Inf", 2*n2)
	line("G1S2", "log_write", "0.001", lw)
	line("G1S2", "log_write", "0.002", lw)
	line("G1S2", "log_write", "+Inf", lw)
	b.WriteString("umstore_publish_stage_seconds_sum{group=\"1\",stage=\"commit\",store=\"G1S1\"} 0.5\numstore_other_total 3\n")
	return b.String()
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestStageStatsSince(t *testing.T) {
	for _, tc := range []struct {
		name         string
		before       string
		after        string
		wantStages   []string
		wantCount    []float64
		wantP50US    []float64
		wantErrNoHis bool
	}{
		{name: "only the run's observations, stores summed",
			before: metricsText(100, 50, 7), after: metricsText(110, 60, 7),
			// commit: 20 in (0,1ms], 20 in (1,2ms] -> p50 at 1 ms; log_write saw nothing.
			wantStages: []string{"commit"}, wantCount: []float64{40}, wantP50US: []float64{1000}},
		{name: "from zero",
			before: metricsText(0, 0, 0), after: metricsText(3, 1, 4),
			wantStages: []string{"commit", "log_write"}, wantCount: []float64{8, 4}, wantP50US: []float64{1000, 500}},
		{name: "an older umstored", before: "umstore_other_total 3\n", wantErrNoHis: true},
	} {
		before, err := parseStages(strings.NewReader(tc.before))
		if tc.wantErrNoHis {
			if !errors.Is(err, errNoStages) {
				t.Errorf("%s: error %v, want errNoStages", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		after, err := parseStages(strings.NewReader(tc.after))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := stageStats(before, after)
		if len(got) != len(tc.wantStages) {
			t.Errorf("%s: stages %+v, want %v", tc.name, got, tc.wantStages)
			continue
		}
		for i, s := range got {
			if s.Stage != tc.wantStages[i] || s.Count != tc.wantCount[i] || math.Abs(s.P50US-tc.wantP50US[i]) > 1e-6 {
				t.Errorf("%s: stage %d = %+v, want %s with %v observations, p50 %v µs", tc.name, i, s, tc.wantStages[i], tc.wantCount[i], tc.wantP50US[i])
			}
		}
	}
}
