package storegroup_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"umstore/internal/clustertest"
)

// metricValue returns the value of the first sample of name whose labels
// include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			return value(m)
		}
	}
	t.Fatalf("no sample of %s with labels %v", name, want)
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// The metrics a store exports move as it works.
func TestMetricsMove(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	me := map[string]string{"store": leader.Name(), "group": "1"}
	if v := metricValue(t, reg, "umstore_raft_state", map[string]string{"store": leader.Name(), "state": "Leader"}); v != 1 {
		t.Fatalf("umstore_raft_state{state=Leader} = %v on the leader", v)
	}
	stored0 := metricValue(t, reg, "umstore_messages_stored_total", me)
	applied0 := metricValue(t, reg, "umstore_raft_applied_index", me)
	batches0 := metricValue(t, reg, "umstore_apply_batch_duration_seconds", me)
	early0 := metricValue(t, reg, "umstore_publish_answered_before_commit_total", me)
	publishRange(t, c, "m", 500, 10)
	// Each of the 50 entries is answered as soon as its result is decided,
	// unless raft's own answer happened to come first.
	if got := metricValue(t, reg, "umstore_publish_answered_before_commit_total", me); got <= early0 {
		t.Fatalf("Publish entries answered before the commit went from %v to %v, want more", early0, got)
	}
	// The last batch may still be committing: answers do not wait for it.
	c.Eventually(5*time.Second, "the last batch is committed", func() bool {
		return metricValue(t, reg, "umstore_messages_stored_total", me) == stored0+500
	})
	if got := metricValue(t, reg, "umstore_raft_applied_index", me); got <= applied0 {
		t.Fatalf("applied index did not move: %v -> %v", applied0, got)
	}
	if got := metricValue(t, reg, "umstore_apply_batch_duration_seconds", me); got <= batches0 {
		t.Fatalf("apply batches observed did not move: %v -> %v", batches0, got)
	}
	if got := metricValue(t, reg, "umstore_repository_messages", me); got != 500 {
		t.Fatalf("repository messages = %v, want 500", got)
	}
}
