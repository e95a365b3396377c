package main

import (
	"slices"
	"sync"
	"time"

	"umstore/publisher"
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
}

type latencies struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

func (r *recorder) summary(source string, st publisher.Stats) summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := summary{Source: source, Sent: len(r.sentAt), Stable: len(r.latencies), GroupsConfirmed: st.Confirmed, Resends: st.Resends, ForcedReleases: st.ForcedReleases, Conflicts: st.Conflicts}
	if s.Sent > 0 {
		s.FirstSeq, s.LastSeq = r.first, r.first+uint64(s.Sent)-1
	}
	if s.Stable > 0 {
		el := r.end.Sub(r.start)
		s.ElapsedS = el.Seconds()
		if el > 0 {
			s.MsgsPerS = float64(s.Stable) / el.Seconds()
			s.MBPerS = float64(r.bytes) / el.Seconds() / 1e6
		}
		sorted := slices.Clone(r.latencies)
		slices.Sort(sorted)
		pct := func(p float64) int64 {
			i := int(p * float64(len(sorted)-1))
			return sorted[i].Microseconds()
		}
		s.LatencyUS = latencies{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), P999: pct(0.999), Max: sorted[len(sorted)-1].Microseconds()}
	}
	return s
}
