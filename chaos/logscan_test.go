package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestScanHostLogStagedRestart(t *testing.T) {
	scan, err := scanHostLogFile("A", filepath.Join("testdata", "host-a-wiped.log"))
	if err != nil {
		t.Fatal(err)
	}
	boots, overlaps := scan.Bootstraps, scan.Overlaps
	var kinds []string
	for _, b := range boots {
		kinds = append(kinds, b.Kind+":"+b.Store)
	}
	if got := strings.Join(kinds, " "); got != "bootstrap:G1S1 bootstrap:G2S1 identity:G1S1" {
		t.Fatalf("bootstraps = %s", got)
	}
	if boots[2].GroupID != "5c0ffee" || boots[2].Incarnation != 1 {
		t.Fatalf("identity event = %+v", boots[2])
	}
	// One empty store per group at a time, and a crash ends a catch-up:
	// G1S2 of incarnation 2 does not overlap G1S2 of incarnation 3.
	if len(overlaps) != 0 {
		t.Fatalf("overlaps = %+v", overlaps)
	}
}

func TestScanHostLogFlagsOverlapAndRebootstrap(t *testing.T) {
	scan, err := scanHostLogFile("A", filepath.Join("testdata", "host-a-overlap.log"))
	if err != nil {
		t.Fatal(err)
	}
	boots, overlaps := scan.Bootstraps, scan.Overlaps
	if len(overlaps) != 1 || strings.Join(overlaps[0].Stores, ",") != "G1S1,G1S2" || overlaps[0].Group != 1 {
		t.Fatalf("overlaps = %+v", overlaps)
	}
	h := NewHistory(0, 1, nil)
	h.AddBootstraps(boots)
	for _, o := range overlaps {
		h.ObserveCatchUp(o)
	}
	rules := map[string]bool{}
	for _, v := range Check(h).Violations {
		rules[v.Rule] = true
	}
	if !rules["rule3"] || !rules["rule4"] {
		t.Fatalf("want rule3 (bootstrapped twice) and rule4 (catching up together), got %v", Check(h).Violations)
	}
}

func TestLogFields(t *testing.T) {
	f := logFields(`time=2026-01-01T10:00:00Z level=INFO msg="a \"quoted\" message" store=G1S1 group=1 empty=`)
	if f["msg"] != `a "quoted" message` || f["store"] != "G1S1" || f["group"] != "1" || f["empty"] != "" {
		t.Fatalf("fields = %v", f)
	}
}

// Raft's snapshot lines, as they reach a host's log, are counted on both
// sides: the leader sending (and failing to), the member installing.
func TestScanHostLogSnapshots(t *testing.T) {
	scan, err := scanHostLogFile("A", filepath.Join("testdata", "host-a-snapshots.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := scan.Snapshots
	want := SnapshotLog{Taken: 1, Sent: 1, SendFailed: 1, Installed: 2, ReceiveFailed: 1, RestoredAtStart: 1}
	installs := got.Installs
	got.Installs = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot counts = %+v, want %+v", got, want)
	}
	if len(installs) != 2 || installs[0].Store != "G2S1" || installs[0].Incarnation != 2 || installs[1].Store != "G1S1" || installs[1].Incarnation != 3 || installs[0].At.IsZero() {
		t.Fatalf("installs = %+v", installs)
	}
	if len(scan.Overlaps) != 0 || len(scan.Bootstraps) != 0 {
		t.Fatalf("bootstraps %+v, overlaps %+v", scan.Bootstraps, scan.Overlaps)
	}
}

func TestScanHostLogCountsRetention(t *testing.T) {
	log := strings.Join([]string{
		`time=2026-01-01T10:00:01Z level=INFO msg="retention released the oldest messages" store=G1S1 group=1 source=s1 through=400 dropped=400 reason=messages`,
		`time=2026-01-01T10:00:02Z level=INFO msg="retention released the oldest messages" store=G1S1 group=1 source=s2 through=380 dropped=380 reason=consumed`,
		`time=2026-01-01T10:00:03Z level=INFO msg="retention released the oldest messages" store=G2S2 group=2 source=s2 through=900 dropped=520 reason=consumed`,
		`time=2026-01-01T10:00:04Z level=INFO msg="holding a publisher back: receiver-paced persistence" store=G2S2 group=2 source=s2 why="source \"s2\" is at its retention limit"`,
	}, "\n")
	scan, err := scanHostLog("A", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := RetentionLog{Releases: map[string]map[string]int{"s1": {"messages": 1}, "s2": {"consumed": 2}}, HeldBack: map[string]int{"s2": 1}}
	if !reflect.DeepEqual(scan.Retention, want) {
		t.Fatalf("retention = %+v, want %+v", scan.Retention, want)
	}
}
