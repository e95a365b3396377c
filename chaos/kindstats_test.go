package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestKindStats checks the attribution of stalls to faults and the restore
// times on a synthetic history of two sources: s1 stalls across a host
// crash, s2 across its own publisher's kill, and both once with no fault.
func TestKindStats(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := NewHistory(0, 1, []string{"s1", "s2"})
	h.Registrations = []Registration{
		{Source: "s1", Incarnation: 1, At: at(0)},
		{Source: "s2", Incarnation: 1, At: at(0)},
		{Source: "s2", Incarnation: 2, At: at(31)}, // after its kill at 20-21
	}
	stable := func(src string, inc int, secs ...float64) {
		for _, s := range secs {
			h.StableTimes = append(h.StableTimes, StableTime{Source: src, Incarnation: inc, At: at(s)})
		}
	}
	stable("s1", 1, 1, 2, 3, 9, 10, 11, 30, 31, 32.5)              // 3-9: the host crash (6 s); 11-30: nothing (19 s)
	stable("s2", 1, 1, 2, 3, 4, 8, 9, 10, 11, 12, 20)              // 4-8 also the host crash (4 s)
	stable("s2", 2, 32, 33, 34)                                    // 20-32: its kill (12 s)
	h.StopAsked = map[string]time.Time{"s1": at(33), "s2": at(35)} // s2's last stall: 34-35
	h.Faults = []FaultRecord{
		{Kind: KillHost, Target: "A", Start: at(4), End: at(6), Restored: at(8.5)},
		{Kind: KillPublisher, Target: "s2", Start: at(20), End: at(21)},
		{Kind: Partition, Target: "A|B", Start: at(40), End: at(45)}, // never restored
	}
	got := kindStats(h)
	check := func(kind string, count int, stall, restore time.Duration, unrestored int, where string) {
		t.Helper()
		ks := got[kind]
		if ks == nil {
			t.Fatalf("no statistics for %s: %v", kind, got)
		}
		if ks.Count != count || ks.LongestStall != stall || ks.RestoreMax != restore || ks.Unrestored != unrestored || !strings.Contains(ks.StallWhere, where) {
			t.Errorf("%s: got count %d, stall %v (%s), restore max %v, unrestored %d; want %d, %v (%q), %v, %d",
				kind, ks.Count, ks.LongestStall, ks.StallWhere, ks.RestoreMax, ks.Unrestored, count, stall, where, restore, unrestored)
		}
	}
	check(string(KillHost), 1, 6*time.Second, 2500*time.Millisecond, 0, "source s1: nothing newly stable from 10:00:03.000 to 10:00:09.000 (kill-host A")
	check(string(KillPublisher), 1, 12*time.Second, 10*time.Second, 0, "source s2: nothing newly stable from 10:00:20.000 to 10:00:32.000")
	check(string(Partition), 1, 0, 0, 1, "")

	check(noFault, 0, 19*time.Second, 0, 0, "source s1: nothing newly stable from 10:00:11.000 to 10:00:30.000")
	if keys := sortedKinds(got); keys[len(keys)-1] != noFault || keys[0] != string(KillHost) {
		t.Errorf("kinds in order %v, want the registry's order and none last", keys)
	}
	// s2's publisher killed inside a host fault that began earlier: the
	// stall is its own kill's; s1's stall from 11 s is the pause's now.
	h.Faults = append(h.Faults, FaultRecord{Kind: PauseHost, Target: "B", Start: at(19), End: at(22), Restored: at(22.5)})
	got = kindStats(h)
	check(string(KillPublisher), 1, 12*time.Second, 10*time.Second, 0, "(kill-publisher s2 from 10:00:20.000)")
	check(string(PauseHost), 1, 19*time.Second, 500*time.Millisecond, 0, "source s1: nothing newly stable from 10:00:11.000")
	// A kill of s1's durable receiver: no publisher's stall while s1 is
	// not paced; s1's own stall (before the pause's) once it is, until
	// the receiver's next incarnation registered.
	h.Faults = append(h.Faults, FaultRecord{Kind: KillReceiver, Target: "s1", Start: at(12), End: at(12.5)})
	h.DurableRegistered("s1", 2, 0, 0, "", at(29))
	got = kindStats(h)
	check(string(KillReceiver), 1, 0, 16500*time.Millisecond, 0, "")
	h.RPP = &RPPSettings{Source: "s1", Mode: "blocking", ActivityTimeout: 30 * time.Second}
	got = kindStats(h)
	check(string(KillReceiver), 1, 19*time.Second, 16500*time.Millisecond, 0, "source s1: nothing newly stable from 10:00:11.000 to 10:00:30.000 (kill-receiver s1")
	// With s1 paced, the unpaced stalls are s2's alone: the host crash
	// held s2 for 4 s, and s1's 6 s there is its paced hold.
	if ks := got[string(KillHost)]; ks.LongestStall != 6*time.Second || ks.UnpacedStall != 4*time.Second {
		t.Errorf("kill-host with s1 paced: longest stall %v, unpaced %v; want 6s and 4s (s2's)", ks.LongestStall, ks.UnpacedStall)
	}
	if ks := got[string(KillReceiver)]; ks.UnpacedStall != 0 {
		t.Errorf("kill-receiver of the paced source: unpaced stall %v, want 0", ks.UnpacedStall)
	}
}

func TestKindTotals(t *testing.T) {
	var tot Totals
	tot.PerKind = map[string]*KindTotals{}
	for i, ks := range []*KindStats{
		{Count: 2, LongestStall: 3 * time.Second, StallWhere: "a", UnpacedStall: 2 * time.Second, Restores: 2, RestoreMax: 4 * time.Second, RestoreTotal: 6 * time.Second},
		{Count: 1, LongestStall: 5 * time.Second, StallWhere: "b", UnpacedStall: time.Second, Restores: 1, RestoreMax: 2 * time.Second, RestoreTotal: 2 * time.Second, Unrestored: 1},
	} {
		tot.add(scheduleResult{Index: i, Result: Result{PerKind: map[string]*KindStats{"kill-host": ks}}})
	}
	kt := tot.PerKind["kill-host"]
	if kt.Count != 3 || kt.LongestStallS != 5 || kt.StallWhere != "schedule 1: b" || kt.RestoreMaxS != 4 || math.Abs(kt.RestoreMeanS-8.0/3) > 1e-6 || kt.Unrestored != 1 || kt.UnpacedStallS != 2 {
		t.Fatalf("totals %+v", kt)
	}

}
