package main

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// recorder keeps each message's send time and measures its
// publish-to-stable latency when the publisher reports it stable.
type recorder struct {
	mu        sync.Mutex
	first     uint64      // first sequence number of the session
	sentAt    []time.Time // by seq-first
	bytes     int64
	latencies []time.Duration
	stableTo  uint64
	start     time.Time
	end       time.Time
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) sent(seq uint64, at time.Time, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sentAt) == 0 {
		r.start = at
	}
	for uint64(len(r.sentAt)) <= seq-r.first {
		r.sentAt = append(r.sentAt, time.Time{})
	}
	r.sentAt[seq-r.first] = at
	r.bytes += int64(size)
}

// next is the sequence number the next send gets.
func (r *recorder) next() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first + uint64(len(r.sentAt))
}

// unsend forgets a send that failed.
func (r *recorder) unsend(seq uint64, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := seq - r.first; i == uint64(len(r.sentAt))-1 {
		r.sentAt = r.sentAt[:i]
		r.bytes -= int64(size)
	}
}

// stable is the publisher's OnStable callback.
func (r *recorder) stable(first, last uint64) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq := first; seq <= last; seq++ {
		i := seq - r.first
		if i < uint64(len(r.sentAt)) && !r.sentAt[i].IsZero() {
			r.latencies = append(r.latencies, now.Sub(r.sentAt[i]))
		}
	}
	r.stableTo = last
	r.end = now
}

func (r *recorder) counts() (sent, stable int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sentAt), len(r.latencies)
}

// summary is umpub's report; the JSON names are the contract of SPEC §5.
type summary struct {
	Source          string    `json:"source"`
	Sources         int       `json:"sources,omitempty"` // with --sources K: K, and the counts are totals
	Sent            int       `json:"sent"`
	Stable          int       `json:"stable"`
	FirstSeq        uint64    `json:"first_seq"`
	LastSeq         uint64    `json:"last_seq"`
	ElapsedS        float64   `json:"elapsed_s"`
	MsgsPerS        float64   `json:"msgs_per_s"`
	MBPerS          float64   `json:"mb_per_s"`
	LatencyUS       latencies `json:"latency_us"`
	GroupsConfirmed []uint64  `json:"groups_confirmed"`
	GroupsAnswered  []int     `json:"groups_answered"` // groups that answered the registration
	Conflicts       uint64    `json:"conflicts"`       // sequence numbers a group held with another payload
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
	var all []time.Duration
	var start, end time.Time
	var bytes int64
	for i, run := range runs {
		r := run.rec
		r.mu.Lock()
		s.Sent += len(r.sentAt)
		s.Stable += len(r.latencies)
		all = append(all, r.latencies...)
		bytes += r.bytes
		if len(r.sentAt) > 0 && (start.IsZero() || r.start.Before(start)) {
			start = r.start
		}
		if r.end.After(end) {
			end = r.end
		}
		if i == 0 && len(r.sentAt) > 0 {
			s.FirstSeq, s.LastSeq = r.first, r.first+uint64(len(r.sentAt))-1
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
		slices.Sort(all)
		pct := func(p float64) int64 { return all[int(p*float64(len(all)-1))].Microseconds() }
		s.LatencyUS = latencies{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), P999: pct(0.999), Max: all[len(all)-1].Microseconds()}
	}
	return s, sendErr, flushErr
}
