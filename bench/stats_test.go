package main

import (
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	var s []time.Duration
	for i := 1000; i >= 1; i-- { // 1..1000 µs, unsorted
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	got := percentiles(s)
	// index int(p*(n-1)) of 1..1000: p50 -> 499 -> 500µs, p99 -> 989 -> 990µs.
	want := Latency{P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000}
	if got != want {
		t.Fatalf("percentiles = %+v, want %+v", got, want)
	}
	if (percentiles(nil) != Latency{}) {
		t.Fatal("percentiles of nothing should be zero")
	}
	if got := percentiles([]time.Duration{7 * time.Microsecond}); got.P50 != 7 || got.P999 != 7 || got.Max != 7 {
		t.Fatalf("one sample: %+v", got)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 {
		t.Error("median must not reorder its input")
	}
}
