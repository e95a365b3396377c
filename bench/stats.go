package main

import (
	"slices"
	"time"
)

// Latency is a run's publish-to-stable (umstore) or publish-to-ack
// (JetStream) latency in microseconds, the same fields umpub --json reports.
type Latency struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// percentiles computes exact percentiles from every sample, with the same
// rule as umpub (cmd/umpub/recorder.go): the sample at index
// int(p*(n-1)) of the sorted samples. It sorts samples in place.
func percentiles(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	pct := func(p float64) int64 { return samples[int(p*float64(len(samples)-1))].Microseconds() }
	return Latency{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), P999: pct(0.999), Max: samples[len(samples)-1].Microseconds()}
}

// median of the values (the mean of the middle two for an even count).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
