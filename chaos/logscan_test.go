package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestScanHostLogStagedRestart(t *testing.T) {
	boots, overlaps, err := scanHostLogFile("A", filepath.Join("testdata", "host-a-wiped.log"))
	if err != nil {
		t.Fatal(err)
	}
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
	boots, overlaps, err := scanHostLogFile("A", filepath.Join("testdata", "host-a-overlap.log"))
	if err != nil {
		t.Fatal(err)
	}
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
