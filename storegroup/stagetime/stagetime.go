package stagetime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stage is one stage of a Publish through a store (see the package doc).
type Stage int

// The stages, in the order the package doc describes them.
const (
	Queued Stage = iota
	RaftQueue
	Commit
	Answer
	Total
	LogWrite
	Decide
	RepoCommit
	numStages
)

var names = [numStages]string{"queued", "raft_queue", "commit", "answer", "total", "log_write", "decide", "repo_commit"}

// String returns the stage's label value.
func (s Stage) String() string {
	if s < 0 || s >= numStages {
		return "unknown"
	}
	return names[s]
}

// Timer records one store's stage times. A nil *Timer records nothing, so
// code under test need not make one.
type Timer struct {
	vec *prometheus.HistogramVec
	obs [numStages]prometheus.Observer
}

// New returns the timer of the store the constant labels name.
func New(labels prometheus.Labels) *Timer {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "umstore_publish_stage_seconds",
		Help:        "Time a Publish spends in each stage of a store: queued, raft_queue, commit, answer and total on the leader; log_write, decide and repo_commit on every store (see package stagetime).",
		ConstLabels: labels,
		// 25 µs to about 0.8 s: a stage bound by an fsync is a few hundred
		// microseconds here, a queue behind a busy disk tens of milliseconds.
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
	}, []string{"stage"})
	t := &Timer{vec: vec}
	for s := range numStages {
		t.obs[s] = vec.WithLabelValues(s.String())
	}
	return t
}

// Observe records that one message, or one batch, spent d in stage s.
func (t *Timer) Observe(s Stage, d time.Duration) {
	if t == nil {
		return
	}
	t.obs[s].Observe(d.Seconds())
}

// Since records the time from start until now in stage s, and returns now.
func (t *Timer) Since(s Stage, start time.Time) time.Time {
	now := time.Now()
	if t != nil && !start.IsZero() {
		t.obs[s].Observe(now.Sub(start).Seconds())
	}
	return now
}

// Collector returns the histograms, for a Prometheus registry; nil for a
// nil timer.
func (t *Timer) Collector() prometheus.Collector {
	if t == nil {
		return nil
	}
	return t.vec
}
