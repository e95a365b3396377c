package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Where a umstore publish spends its time: umstored exports, per store,
// the histogram umstore_publish_stage_seconds{store,group,stage} on its
// admin /metrics (package storegroup/stagetime). The bench scrapes it
// before and after each umstore fixed-rate run and reads the run's own
// observations off the difference.

// stageMetric is the histogram's name on /metrics.
const stageMetric = "umstore_publish_stage_seconds"

// stageOrder is the stages in the order a message meets them (the leader's
// first, then the ones every store times), as the table prints them.
var stageOrder = []string{"queued", "raft_queue", "commit", "answer", "total", "log_write", "decide", "repo_commit"}

// errNoStages says /metrics has no stage histogram: an umstored older
// than the stage timers.
var errNoStages = errors.New("no " + stageMetric + " on /metrics (an umstored without stage timers)")

// bucketKey is one cumulative bucket of one store's histogram of one stage.
type bucketKey struct {
	store, stage string
	le           float64 // upper bound in seconds; +Inf for the last
}

// stageScrape is the cumulative bucket counts of every store and stage,
// as /metrics gave them at one moment.
type stageScrape map[bucketKey]float64

// scrapeStages reads the stage histograms from the admin server's /metrics.
func scrapeStages(ctx context.Context, admin string) (stageScrape, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/metrics", nil)
	resp, err := httpc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape stages: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("scrape stages: GET /metrics: %s", resp.Status)
	}
	return parseStages(resp.Body)
}

// parseStages reads the stage buckets out of Prometheus text: lines
// `umstore_publish_stage_seconds_bucket{group="1",stage="commit",store="G1S1",le="0.0001"} 42`.
func parseStages(r io.Reader) (stageScrape, error) {
	s := stageScrape{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := stageMetric + "_bucket{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(prefix):], "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %q: %w", stageMetric, line, err)
		}
		l := parseLabels(labels)
		le, err := strconv.ParseFloat(l["le"], 64) // "+Inf" parses as +Inf
		if err != nil {
			return nil, fmt.Errorf("parse %s: le in %q: %w", stageMetric, line, err)
		}
		s[bucketKey{store: l["store"], stage: l["stage"], le: le}] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /metrics: %w", err)
	}
	if len(s) == 0 {
		return nil, errNoStages
	}
	return s, nil
}

// parseLabels splits `a="x",b="y"` into a map (label values here hold no
// commas or quotes: store names, numbers, stage names).
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	return m
}

// bucket is one cumulative bucket: how many observations were <= le.
type bucket struct {
	le, count float64
}

// since is what was observed between before and s, per stage, the
// stores' buckets summed: the stores that observed a stage (the leaders
// for the leader's stages) make its distribution. Buckets come sorted by
// upper bound.
func (s stageScrape) since(before stageScrape) map[string][]bucket {
	sum := map[string]map[float64]float64{}
	for k, v := range s {
		d := v - before[k]
		if d < 0 { // a restarted store: its counts began again
			d = v
		}
		if sum[k.stage] == nil {
			sum[k.stage] = map[float64]float64{}
		}
		sum[k.stage][k.le] += d
	}
	out := map[string][]bucket{}
	for stage, byLE := range sum {
		var bs []bucket
		for le, n := range byLE {
			bs = append(bs, bucket{le, n})
		}
		slices.SortFunc(bs, func(a, b bucket) int {
			switch {
			case a.le < b.le:
				return -1
			case a.le > b.le:
				return 1
			}
			return 0
		})
		out[stage] = bs
	}
	return out
}

// bucketQuantile is the q-quantile (0..1) of cumulative buckets sorted by
// upper bound, the last +Inf, as Prometheus' histogram_quantile computes
// it: the bucket holding rank q*total, interpolated linearly between its
// lower bound (the previous bucket's upper bound; 0 for the first) and
// its upper bound; in the +Inf bucket, the highest finite bound. NaN when
// nothing was observed.
func bucketQuantile(q float64, bs []bucket) float64 {
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].le, 1) {
		return math.NaN()
	}
	total := bs[len(bs)-1].count
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	i, _ := slices.BinarySearchFunc(bs, rank, func(b bucket, r float64) int {
		if b.count < r {
			return -1
		}
		return 1
	})
	if i >= len(bs)-1 {
		if len(bs) < 2 {
			return math.NaN()
		}
		return bs[len(bs)-2].le
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = bs[i-1].le, bs[i-1].count
	}
	in := bs[i].count - below
	if in <= 0 {
		return bs[i].le
	}
	return lower + (bs[i].le-lower)*(rank-below)/in
}

// stageStat is one stage's share of a run (or the medians over runs).
type stageStat struct {
	Stage string  `json:"stage"`
	Count float64 `json:"observations"` // messages, or batches (log_write, decide, repo_commit)
	P50US float64 `json:"p50_us"`
	P99US float64 `json:"p99_us"`
}

// stageStats are the p50 and p99 of every stage observed between before
// and after, in stageOrder (stages nobody observed left out).
func stageStats(before, after stageScrape) []stageStat {
	per := after.since(before)
	var out []stageStat
	for _, stage := range stageOrder {
		bs := per[stage]
		if len(bs) == 0 || bs[len(bs)-1].count == 0 {
			continue
		}
		out = append(out, stageStat{Stage: stage, Count: bs[len(bs)-1].count,
			P50US: finite(bucketQuantile(0.5, bs) * 1e6), P99US: finite(bucketQuantile(0.99, bs) * 1e6)})
	}
	return out
}

// stageRun is the stage breakdown of one umstore fixed-rate run.
type stageRun struct {
	Rate   float64     `json:"offered_msgs_per_s"`
	Size   int         `json:"size"`
	Run    int         `json:"run"`
	Stages []stageStat `json:"stages"`
}

// stageRow is the medians over the runs of one rate and size: each
// stage's observations, p50 and p99.
type stageRow struct {
	Rate   float64     `json:"offered_msgs_per_s"`
	Size   int         `json:"size"`
	Runs   int         `json:"runs"`
	Stages []stageStat `json:"stages"`
}

// summarizeStages takes, per rate and size, each stage's medians over the
// runs that observed it.
func summarizeStages(runs []stageRun, rates []float64, sizes []int) []stageRow {
	var rows []stageRow
	for _, rate := range rates {
		for _, size := range sizes {
			r := stageRow{Rate: rate, Size: size}
			byStage := map[string][3][]float64{}
			for _, x := range runs {
				if x.Rate != rate || x.Size != size {
					continue
				}
				r.Runs++
				for _, s := range x.Stages {
					v := byStage[s.Stage]
					v[0], v[1], v[2] = append(v[0], s.Count), append(v[1], s.P50US), append(v[2], s.P99US)
					byStage[s.Stage] = v
				}
			}
			if r.Runs == 0 {
				continue
			}
			for _, stage := range stageOrder {
				if v, ok := byStage[stage]; ok {
					r.Stages = append(r.Stages, stageStat{Stage: stage, Count: median(v[0]), P50US: median(v[1]), P99US: median(v[2])})
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// stage returns the row's figures for one stage, and whether it has them.
func (r stageRow) stage(name string) (stageStat, bool) {
	for _, s := range r.Stages {
		if s.Stage == name {
			return s, true
		}
	}
	return stageStat{}, false
}

// finite is v, or 0 for NaN (which JSON cannot carry).
func finite(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
