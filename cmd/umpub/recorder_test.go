package main

import (
	"testing"
	"time"
)

// The recorder keeps send times only for messages in flight, however many
// are sent: a long run does not grow with its count.
func TestRecorderMemoryIsBoundedByTheFlight(t *testing.T) {
	r := newRecorder(newHistograms())
	r.first = 1
	t0 := time.Now()
	const flight, n = 100, 200000
	for seq := uint64(1); seq <= n; seq++ {
		r.sent(seq, t0.Add(time.Duration(seq)*time.Microsecond), 10)
		if seq > flight {
			done := seq - flight
			r.stableAt(done, done, t0.Add(time.Duration(seq)*time.Microsecond))
		}
	}
	if live := len(r.sentAt) - r.head; live != flight {
		t.Fatalf("%d send times held with %d in flight", live, flight)
	}
	if cap(r.sentAt) > 16*flight+8192 {
		t.Fatalf("send-time buffer grew to %d entries for a flight of %d", cap(r.sentAt), flight)
	}
	sent, stable := r.counts()
	if sent != n || stable != n-flight {
		t.Fatalf("counts %d sent, %d stable", sent, stable)
	}
}

// At a fixed rate, a message is timed from when it was due: a publisher
// held back for a second shows that second in the latency (coordinated
// omission corrected), while the raw latency, from the actual send, does
// not.
func TestRecorderCorrectsCoordinatedOmission(t *testing.T) {
	r := newRecorder(newHistograms())
	r.first = 1
	t0 := time.Now()
	r.pace(t0, 10*time.Millisecond) // 100 messages due over the first second
	late := t0.Add(time.Second)     // ... but all sent after it
	for seq := uint64(1); seq <= 100; seq++ {
		r.sent(seq, late, 1)
	}
	r.stableAt(1, 100, late.Add(time.Millisecond))
	s, _, _ := mergeRuns("s", []*sourceRun{{source: "s", rec: r}})
	if p := s.LatencyRawUS.P50; p < 900 || p > 1100 {
		t.Errorf("raw p50 %dus, want about 1000 (1ms from the send)", p)
	}
	if p := s.LatencyUS.P50; p < 450000 || p > 560000 {
		t.Errorf("corrected p50 %dus, want about 500000 (due times spread over the second)", p)
	}
	if m := s.LatencyUS.Max; m < 990000 || m > 1010000 {
		t.Errorf("corrected max %dus, want about 1001000", m)
	}
	if s.Sent != 100 || s.Stable != 100 || s.FirstSeq != 1 || s.LastSeq != 100 {
		t.Errorf("summary %+v", s)
	}
}

// Flat out (no rate) both latencies are the raw one.
func TestRecorderFlatOut(t *testing.T) {
	r := newRecorder(newHistograms())
	r.first = 5
	t0 := time.Now()
	for seq := uint64(5); seq <= 14; seq++ {
		r.sent(seq, t0, 1)
	}
	r.unsend(14, 1)
	r.stableAt(5, 13, t0.Add(2*time.Millisecond))
	s, _, _ := mergeRuns("s", []*sourceRun{{source: "s", rec: r}})
	if s.LatencyUS != s.LatencyRawUS || s.LatencyUS.P50 < 1900 || s.LatencyUS.P50 > 2100 {
		t.Errorf("latencies %+v raw %+v, want both about 2000us", s.LatencyUS, s.LatencyRawUS)
	}
	if s.Sent != 9 || s.LastSeq != 13 {
		t.Errorf("summary %+v", s)
	}
}
