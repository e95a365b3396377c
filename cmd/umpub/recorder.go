package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorder measures each message's publish-to-stable latency in constant
// memory: HdrHistogram histograms (a fixed few hundred KB whatever the
// count, shared by every source of the run: histograms) and the send times
// of the messages in flight only, which the flight size bounds.
//
// At a fixed --rate the latency is also corrected for coordinated
// omission: a message is timed from when the rate says it was due, not
// from when it was sent, so the time a blocked publisher spent waiting
// (the flight full, a group failing over) counts against the messages it
// held back, as it would for a real source producing at that rate.
type recorder struct {
	mu       sync.Mutex
	first    uint64  // first sequence number of the session
	n        uint64  // messages sent: first .. first+n-1
	sentAt   []int64 // send times (ns since start) of stableTo+1 .. first+n-1, from head
	head     int
	stableTo uint64
	stableN  int
	bytes    int64
	start    time.Time     // first send
	end      time.Time     // last stability report
	paceFrom time.Time     // when message first was due (with a rate)
	interval time.Duration // between messages at the fixed rate; 0: flat out
	lat      *histograms
}

// histograms are what every source of a run records into: two
// per source would cost 100,000 sources tens of GB.
type histograms struct {
	mu  sync.Mutex
	raw *hdrhistogram.Histogram
	due *hdrhistogram.Histogram // latency from the due time (= raw when flat out)
}

func newHistograms() *histograms { return &histograms{raw: newHistogram(), due: newHistogram()} }

// Latencies are recorded in microseconds, from 1µs to an hour, to three
// significant digits.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// newRecorder returns a recorder for one source that records into lat.
func newRecorder(lat *histograms) *recorder { return &recorder{lat: lat} }

// pace says that message i (from first) of this session is due at
// from + i*interval.
func (r *recorder) pace(from time.Time, interval time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paceFrom, r.interval = from, interval
}

func (r *recorder) sent(seq uint64, at time.Time, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.start = at
	}
	if seq != r.first+r.n {
		return // umpub sends in order; anything else is not recorded
	}
	r.sentAt = append(r.sentAt, int64(at.Sub(r.start)))
	r.n++
	r.bytes += int64(size)
}

// next is the sequence number the next send gets.
func (r *recorder) next() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first + r.n
}

// unsend forgets a send that failed (the last one).
func (r *recorder) unsend(seq uint64, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n > 0 && seq == r.first+r.n-1 && len(r.sentAt) > r.head {
		r.sentAt = r.sentAt[:len(r.sentAt)-1]
		r.n--
		r.bytes -= int64(size)
	}
}

// stable is the publisher's OnStable callback: in order, each range once.
func (r *recorder) stable(first, last uint64) { r.stableAt(first, last, time.Now()) }

func (r *recorder) stableAt(first, last uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return
	}
	since := int64(now.Sub(r.start))
	r.lat.mu.Lock()
	defer r.lat.mu.Unlock()
	for seq := max(first, r.stableTo+1, r.first); seq <= last && seq < r.first+r.n; seq++ {
		i := r.head + int(seq-max(r.stableTo+1, r.first))
		if i >= len(r.sentAt) {
			break
		}
		record(r.lat.raw, since-r.sentAt[i])
		if r.interval > 0 {
			due := r.paceFrom.Add(time.Duration(seq-r.first) * r.interval)
			record(r.lat.due, int64(now.Sub(due)))
		} else {
			record(r.lat.due, since-r.sentAt[i])
		}
		r.stableN++
	}
	// Drop the send times of what is now stable.
	if done := min(last, r.first+r.n-1); done > r.stableTo && done >= r.first {
		drop := int(done - max(r.stableTo, r.first-1))
		r.head = min(r.head+drop, len(r.sentAt))
		r.stableTo = done
		if r.head > 4096 && r.head*2 > len(r.sentAt) {
			k := copy(r.sentAt, r.sentAt[r.head:])
			r.sentAt, r.head = r.sentAt[:k], 0
		}
	}
	r.end = now
}

// record adds a latency in nanoseconds, clamped to the histogram's range.
func record(h *hdrhistogram.Histogram, ns int64) {
	us := min(max(ns/int64(time.Microsecond), histLowest), histHighest)
	_ = h.RecordValue(us)
}

func (r *recorder) counts() (sent, stable int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.n), r.stableN
}

// summary is umpub's report; the JSON names are the contract of SPEC §5.
type summary struct {
	Source   string  `json:"source"`
	Sources  int     `json:"sources,omitempty"` // with --sources K: K, and the counts are totals
	Sent     int     `json:"sent"`
	Stable   int     `json:"stable"`
	FirstSeq uint64  `json:"first_seq"`
	LastSeq  uint64  `json:"last_seq"`
	ElapsedS float64 `json:"elapsed_s"`
	// RegisterS, with --sources K, is how long the K registrations took:
	// every source registers before any sends, so ElapsedS and MsgsPerS
	// are those of K live sources.
	RegisterS float64 `json:"register_s,omitempty"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	MBPerS    float64 `json:"mb_per_s"`
	// LatencyUS is publish-to-stable latency; at a fixed --rate corrected
	// for coordinated omission (timed from when each message was due).
	LatencyUS latencies `json:"latency_us"`
	// LatencyRawUS is timed from each actual send, uncorrected (the same
	// as LatencyUS without --rate).
	LatencyRawUS    latencies `json:"latency_raw_us"`
	GroupsConfirmed []uint64  `json:"groups_confirmed"`
	GroupsAnswered  []int     `json:"groups_answered"`             // groups that answered the registration
	Intragroup      []string  `json:"groups_intragroup,omitempty"` // the intragroup behaviour each group of GroupsAnswered applies
	Conflicts       uint64    `json:"conflicts"`                   // sequence numbers a group held with another payload
	Resends         uint64    `json:"resends"`
	ForcedReleases  uint64    `json:"forced_releases"`
	// Session is the registration the publisher used (of the first
	// source): "regid:N", "session-id:0x..." or a random one.
	Session string `json:"session"`
	// Unstable counts messages reported unstable: past
	// --stability-lifetime, or lost in a group.
	Unstable   uint64 `json:"unstable"`
	FlightOver int64  `json:"flight_over"` // times the flight went over its limit (notify)
}

type latencies struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// mergeRuns sums the runs of every source into one summary: counts add up,
// throughput is over the whole span, latency percentiles are over every
// message. With one source it is that source's summary.
func mergeRuns(name string, runs []*sourceRun) (summary, error, error) {
	s := summary{Source: name}
	var sendErr, flushErr error
	due, raw := newHistogram(), newHistogram()
	merged := map[*histograms]bool{}
	var start, end time.Time
	var bytes int64
	for i, run := range runs {
		r := run.rec
		r.mu.Lock()
		s.Sent += int(r.n)
		s.Stable += r.stableN
		if !merged[r.lat] {
			merged[r.lat] = true
			r.lat.mu.Lock()
			due.Merge(r.lat.due)
			raw.Merge(r.lat.raw)
			r.lat.mu.Unlock()
		}
		bytes += r.bytes
		if r.n > 0 && (start.IsZero() || r.start.Before(start)) {
			start = r.start
		}
		if r.end.After(end) {
			end = r.end
		}
		if i == 0 && r.n > 0 {
			s.FirstSeq, s.LastSeq = r.first, r.first+r.n-1
		}
		r.mu.Unlock()
		st := run.stats
		s.Resends += st.Resends
		s.ForcedReleases += st.ForcedReleases
		s.Conflicts += st.Conflicts
		s.Unstable += st.ReportedUnstable + st.Lost
		s.FlightOver += run.flightOver.Load()
		if i == 0 {
			s.Session = run.session
			s.GroupsConfirmed, s.GroupsAnswered = st.Confirmed, run.answered
		}
		if sendErr == nil && run.sendErr != nil {
			sendErr = fmt.Errorf("source %s: %w", run.source, run.sendErr)
		}
		if flushErr == nil && run.flushErr != nil {
			flushErr = fmt.Errorf("source %s: %w", run.source, run.flushErr)
		}
	}
	if len(runs) > 1 {
		s.Sources = len(runs)
	}
	if s.Stable > 0 && end.After(start) {
		el := end.Sub(start)
		s.ElapsedS = el.Seconds()
		s.MsgsPerS = float64(s.Stable) / el.Seconds()
		s.MBPerS = float64(bytes) / el.Seconds() / 1e6
		s.LatencyUS, s.LatencyRawUS = percentiles(due), percentiles(raw)
	}
	return s, sendErr, flushErr
}

// percentiles reads the summary's percentiles off a histogram.
func percentiles(h *hdrhistogram.Histogram) latencies {
	if h.TotalCount() == 0 {
		return latencies{}
	}
	return latencies{P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9), Max: h.Max()}
}
