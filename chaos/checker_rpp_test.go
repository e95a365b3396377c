package main

import (
	"strings"
	"testing"
	"time"

	"umstore/publisher"
)

// pacedHealthy is healthy(20) with s1 receiver-paced: its durable receiver
// registers 10 s before anything is published, is handed 1..20 (one every
// 100 ms from t0) and closes at 2 s.
func pacedHealthy() *History {
	h := healthy(20)
	h.RPP = &RPPSettings{Source: "s1", Mode: publisher.PacingBlocking, ActivityTimeout: 30 * time.Second}
	h.DurableStarted("s1", 1, false, at(-10_100))
	h.DurableRegistered("s1", 1, 0, 0, "new name", at(-10_000))
	last := hand(h, 1, 1, 20, 0)
	h.DurableEnded("s1", 1, "closed", 20, at(last+100))
	return h
}

// pacedDown is healthy(20) with s1 receiver-paced and a limit of 5
// messages: incarnation 1 of its durable receiver is handed 1..10 and
// killed at 1 s; incarnation 2 (a new session) registers at regMs,
// resuming at 11, and is handed 11..20 from handMs.
func pacedDown(regMs, handMs int) *History {
	h := healthy(20)
	h.RPP = &RPPSettings{Source: "s1", Mode: publisher.PacingBlocking, ActivityTimeout: 30 * time.Second}
	h.Snapshots = &SnapshotSettings{RetentionMaxMessages: 5}
	h.RetentionReleases = true
	h.DurableStarted("s1", 1, false, at(-100))
	h.DurableRegistered("s1", 1, 0, 0, "new name", at(-50))
	hand(h, 1, 1, 10, 0)
	h.DurableEnded("s1", 1, "killed", 0, at(1000))
	h.DurableStarted("s1", 2, true, at(1100))
	h.DurableRegistered("s1", 2, 11, 10, "both groups at 10", at(regMs))
	last := hand(h, 2, 11, 20, handMs)
	h.DurableEnded("s1", 2, "closed", 20, at(last+100))
	return h
}

// released records a status sample of store (of group) showing s1
// released through `through`, the store holding up to high, at ms.
func released(h *History, store string, group int, through, high uint64, ms int) {
	st := storeStatus{Name: store, Group: group, Sources: []sourceStatus{{Name: "s1", TrimmedThrough: through, HighSeq: high, Count: high - through, Pacing: "blocking"}}}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeStoreAt("A", st, at(ms))
}

func TestCheckRPP(t *testing.T) {
	cases := []struct {
		name    string
		history func() *History
		want    string // text of the rpp violation; "" = none
		excused int
	}{
		{
			name: "released after the receiver consumed",
			history: func() *History {
				h := pacedHealthy()
				released(h, "G1S1", 1, 10, 20, 1500) // handed up to 16 by then
				released(h, "G2S2", 2, 12, 20, 1500)
				released(h, "G1S3", 1, 10, 20, 1600)
				return h
			},
		},
		{
			name: "released before the receiver consumed",
			history: func() *History {
				h := pacedHealthy()
				released(h, "G1S1", 1, 18, 20, 1000) // handed up to 11
				return h
			},
			want: "store G1S1 (group 1, host A) showed it released through 18 at 10:00:01.000 (its group had shown 0), when the receiver had been handed up to 11: 7 messages released before it consumed them; its receiver's hold cannot have lapsed",
		},
		{
			name: "released within the limit while the receiver was down longer than the timeout",
			history: func() *History {
				h := pacedDown(40_000, 41_000) // gone from 1 s to 40 s
				released(h, "G1S1", 1, 12, 20, 35_000)
				return h
			},
			excused: 1,
		},
		{
			name: "released while the receiver was down, but not for the timeout",
			history: func() *History {
				h := pacedDown(40_000, 41_000)
				released(h, "G1S1", 1, 12, 20, 20_000) // 19 s after the kill
				return h
			},
			want: "its receiver's hold cannot have lapsed",
		},
		{
			name: "released while the receiver was down, beyond what the limit releases",
			history: func() *History {
				h := pacedDown(40_000, 41_000)
				released(h, "G1S1", 1, 18, 20, 35_000) // the limit keeps 5 of 20
				return h
			},
			want: "but retention's limits alone release less (the store held up to 20, a limit of 5 messages)",
		},
		{
			name: "released while the receiver was down, with no limit",
			history: func() *History {
				h := pacedDown(40_000, 41_000)
				h.Snapshots, h.RetentionReleases = nil, false
				released(h, "G1S1", 1, 12, 20, 35_000)
				return h
			},
			want: "released through 12",
		},
		{
			name: "a store of the group shows the release late, after the receiver is back",
			history: func() *History {
				h := pacedDown(40_000, 70_000) // registered at 40 s, handed nothing until 70 s
				released(h, "G1S1", 1, 12, 20, 35_000)
				released(h, "G1S2", 1, 12, 20, 60_000)
				return h
			},
			excused: 1,
		},
		{
			name: "a release first shown after the receiver is back",
			history: func() *History {
				h := pacedDown(40_000, 70_000)
				released(h, "G1S1", 1, 12, 20, 35_000)
				released(h, "G2S1", 2, 12, 20, 60_000) // group 2 releases once its hold is back
				return h
			},
			want:    "store G2S1 (group 2, host A) showed it released through 12 at 10:01:00.000",
			excused: 1,
		},
		{
			name: "a host fault keeps the window open until the deployment is restored",
			history: func() *History {
				h := pacedDown(40_000, 70_000)
				h.Fault(FaultRecord{Kind: KillHost, Target: "A", Start: at(39_000), End: at(41_000), Restored: at(58_000)})
				released(h, "G1S1", 1, 12, 20, 35_000)
				released(h, "G2S1", 2, 12, 20, 59_500) // its leader decided while the group was down
				return h
			},
			excused: 2,
		},
		{
			name: "released within the limit before the first registration was on record",
			history: func() *History {
				h := pacedDown(40_000, 41_000)
				h.Durable["s1"][0].Registered = at(2000) // registered late, after the first messages
				released(h, "G1S1", 1, 7, 12, 500)       // handed up to 6; the limit keeps 5 of 12
				return h
			},
			excused: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.history()
			res := Check(h)
			var rpp []Violation
			for _, v := range res.Violations {
				if v.Rule == "rpp" {
					rpp = append(rpp, v)
				} else {
					t.Errorf("unexpected violation %v", v)
				}
			}
			if res.RPP == nil || res.RPP.Excused != tc.excused {
				t.Errorf("report %+v, want %d excused", res.RPP, tc.excused)
			}
			if tc.want == "" {
				if len(rpp) > 0 {
					t.Fatalf("want no rpp violation, got %v", rpp)
				}
				return
			}
			if len(rpp) != 1 || !strings.Contains(rpp[0].Detail, tc.want) {
				t.Fatalf("want one rpp violation containing %q, got %v", tc.want, rpp)
			}
		})
	}
}

// What a store released of the paced source after its receiver consumed
// it is not lost, and the unnamed follower may be told so; an unpaced
// source released alike is a loss.
func TestPacedReleaseIsNotLoss(t *testing.T) {
	h := pacedHealthy()
	released(h, "G1S1", 1, 8, 20, 1500)
	released(h, "G2S1", 2, 8, 20, 1500)
	for seq := uint64(1); seq <= 8; seq++ {
		delete(h.Final["s1"].Hashes, seq)
	}
	h.Deliveries["s1"] = h.Deliveries["s1"][8:]
	h.Missed("s1", Range{From: 1, To: 8})
	if res := Check(h); res.Lost != 0 || len(res.Violations) != 0 {
		t.Fatalf("lost %d, violations %v; want none", res.Lost, res.Violations)
	}
	// Its durable receiver, which paces it, is still owed every message.
	h.Durable["s1"][0].Handed = h.Durable["s1"][0].Handed[2:]
	if res := Check(h); !hasViolation(res, "durable", "2 acknowledged messages never reached its durable receiver: 1-2") {
		t.Fatalf("violations %v", res.Violations)
	}
	h = pacedHealthy()
	released(h, "G1S1", 1, 8, 20, 1500)
	for seq := uint64(1); seq <= 8; seq++ {
		delete(h.Final["s1"].Hashes, seq)
	}
	h.RPP = nil
	if res := Check(h); res.Lost != 8 || !hasViolation(res, "retention", "released source s1 through 8") {
		t.Fatalf("unpaced: lost %d, violations %v; want 8 lost and the retention rule", res.Lost, res.Violations)
	}
}

func hasViolation(res Result, rule, want string) bool {
	for _, v := range res.Violations {
		if v.Rule == rule && strings.Contains(v.Detail, want) {
			return true
		}
	}
	return false
}

func TestRPPWindows(t *testing.T) {
	h := pacedDown(40_000, 41_000)
	ws := rppWindows(h, "s1", 30*time.Second)
	// Before the first registration (and 6 s for every group to record
	// it), from 30 s less the expiry slack after the kill at 1 s until 6 s
	// after the next registration, each 2 s more, and from 30 s less the
	// slack after the close (at 41.9 s + 100 ms) on.
	want := []window{{to: at(-50 + 6000 + 2000)}, {from: at(1000 + 30_000).Add(-expirySlack), to: at(40_000 + 6000 + 2000)}, {from: at(42_000 + 30_000).Add(-expirySlack), to: farFuture}}
	if len(ws) != len(want) {
		t.Fatalf("windows %+v", ws)
	}
	for i := range want {
		if !ws[i].from.Equal(want[i].from) || !ws[i].to.Equal(want[i].to) {
			t.Errorf("window %d: %v to %v, want %v to %v (%s)", i, ws[i].from, ws[i].to, want[i].from, want[i].to, ws[i].what)
		}
	}
}

// TestRPPReportCountsStrangersSources: the report names the run's own
// sources and only counts a stranger's, of which one flood registers
// hundreds (the short variant's summary line was 280 KB of them).
func TestRPPReportCountsStrangersSources(t *testing.T) {
	r := &RPPReport{Source: "s2", Mode: "blocking",
		TrimmedThrough: map[string]uint64{"s1": 7, "s2": 9, floodSourcePrefix + "-ab-1": 0, floodSourcePrefix + "-ab-2": 0, strangerSourcePrefix + "-x": 0},
		MaxHeld:        map[string]uint64{}}
	got := r.String()
	if !strings.Contains(got, "s1 released through 7") || !strings.Contains(got, "; 3 sources of strangers not listed") || strings.Contains(got, floodSourcePrefix+"-ab") {
		t.Fatalf("report: %s", got)
	}
}
