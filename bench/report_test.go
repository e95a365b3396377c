package main

import (
	"bytes"
	"strings"
	"testing"
)

// testRuns is one size's runs of all four systems: umstore 100k msgs/s,
// umstore 1 group 150k, JetStream sync_always 50k, default 200k.
func testRuns(size int) []runResult {
	mk := func(sys string, mps float64, p99 int64, wrote int64) runResult {
		return runResult{System: sys, Size: size, Run: 1, Messages: 1000, MsgsPerS: mps, Stores: storesOf(sys),
			LatencyUS: Latency{P99: p99}, DiskWriteBytes: wrote, CPUSeconds: 2, ClientCPUSeconds: 0.5}
	}
	payload := int64(1000 * size)
	return []runResult{
		mk(sysUM, 100e3, 20e3, 12*payload), mk(sysUM1, 150e3, 10e3, 3*payload),
		mk(sysJSSync, 50e3, 40e3, 6*payload), mk(sysJSDefault, 200e3, 5e3, 6*payload),
	}
}

func TestSummarizeRatios(t *testing.T) {
	systems := []string{sysUM, sysUM1, sysJSSync, sysJSDefault}
	runs := append(testRuns(1024), runResult{System: sysUM, Size: 1024, Run: 2, Error: "failed"})
	for _, tc := range []struct {
		half          bool
		system        string
		ratio, ratio1 float64
	}{
		{false, sysJSSync, 2, 3},
		{false, sysJSDefault, 0.5, 0.75},
		{false, sysUM1, 0, 0},
		{true, sysJSSync, 2, 4}, // p99 this ÷ umstore, ÷ umstore 1 group
		{true, sysUM1, 0.5, 0},
		{true, sysUM, 0, 0},
	} {
		rows := summarize(runs, []int{1024}, systems, tc.half)
		r := find(rows, 1024, tc.system)
		if r.Ratio != tc.ratio || r.Ratio1G != tc.ratio1 {
			t.Errorf("half=%v %s: ratios %v, %v; want %v, %v", tc.half, tc.system, r.Ratio, r.Ratio1G, tc.ratio, tc.ratio1)
		}
	}
	rows := summarize(runs, []int{1024}, systems, false)
	um := find(rows, 1024, sysUM)
	if um.Failed != 1 || um.WritePerPayload != 12 || um.WritePerPayloadPerStore != 2 || um.CPUPerMillion != 2500 {
		t.Errorf("umstore row: failed %d, bytes %v (per store %v), CPU per M %v; want 1, 12 (2), 2500", um.Failed, um.WritePerPayload, um.WritePerPayloadPerStore, um.CPUPerMillion)
	}
	if one := find(rows, 1024, sysUM1); one.WritePerPayloadPerStore != 1 || one.Stores != 3 {
		t.Errorf("umstore 1 group: %v per store over %d stores, want 1 over 3", one.WritePerPayloadPerStore, one.Stores)
	}
}

// TestGoals checks the goal table's verdicts on known figures, and that a
// row not measured says so instead of passing.
func TestGoals(t *testing.T) {
	systems := []string{sysUM, sysUM1, sysJSSync, sysJSDefault}
	sizes := []int{64, 1024}
	runs := append(testRuns(64), testRuns(1024)...)
	r := &results{Config: config{Sizes: sizes, Systems: systems}}
	r.Throughput = summarize(runs, sizes, systems, false)
	r.HalfLoad = summarize(runs, sizes, systems, true)
	r.Catchup = []*catchupResult{
		{Layout: "2x3", DiskWriteMBps: 1000, Stores: []catchupStore{{Name: "G1S1", MBps: 900, OfDisk: 0.9}}},
		{Layout: "1x3", DiskWriteMBps: 1000, Stores: []catchupStore{{Name: "G1S3", MBps: 400, OfDisk: 0.4}}},
	}
	r.Memory = &memoryResult{Steps: []memSample{{}, {RetainedMB: 1074, procMem: procMem{RSSMB: 250}}}}
	want := map[string]string{
		"six stores (two groups, `any`) vs JetStream R3 `sync_always`, 64 B": "yes", // 2.0x
		"same, 1 KiB": "yes",
		"one group of three (three `umstored run` hosts) vs JetStream R3 `sync_always`, 64 B": "yes", // 3.0x
		"bytes written per payload byte per store, 1 KiB":                                     "no",  // umstore 2.0
		"p99 publish-to-stable at half load, 64 B":                                            "yes", // 20 ms vs 40 ms
		"wiped store catch-up":                 "no", // 1x3 preferred: 0.4
		"soak with retention cycling (--soak)": "n/a",
		"RSS after retaining 1 GB per group":   "yes",
	}
	got := map[string]goal{}
	for _, g := range computeGoals(r) {
		got[g.Figure] = g
	}
	for fig, met := range want {
		g, ok := got[fig]
		if !ok {
			t.Errorf("no goal row %q", fig)
			continue
		}
		if g.Met != met {
			t.Errorf("%q: met %q (%s), want %q", fig, g.Met, g.Measured, met)
		}
	}
	if g := got["wiped store catch-up"]; !strings.HasPrefix(g.Measured, "1x3: G1S3") {
		t.Errorf("catch-up goal measured on %q, want the 1x3 layout's store", g.Measured)
	}

	// Nothing measured: every row n/a, none passes.
	for _, g := range computeGoals(&results{}) {
		if g.Met != "n/a" {
			t.Errorf("empty results: %q met %q", g.Figure, g.Met)
		}
	}
	// The Markdown of it all prints without a panic and has the goals.
	var buf bytes.Buffer
	r.LoadAvg = []string{"0 0 0"}
	r.Goals = computeGoals(r)
	printMarkdown(&buf, r)
	if !strings.Contains(buf.String(), "### Goals (issues 15 and 26) in this run") || !strings.Contains(buf.String(), "| 1 KiB | umstore 1 group | 3 |") {
		t.Errorf("Markdown lacks the goals or the one-group row:\n%s", buf.String())
	}
}

func TestProfileFile(t *testing.T) {
	for _, tc := range []struct {
		file        string
		size, sizes int
		want        string
	}{
		{"/tmp/cpu.prof", 64, 1, "/tmp/cpu.prof"},
		{"/tmp/cpu.prof", 64, 2, "/tmp/cpu-64B.prof"},
		{"/tmp/cpu.prof", 1024, 2, "/tmp/cpu-1KiB.prof"},
		{"cpu", 1024, 2, "cpu-1KiB"},
	} {
		if got := profileFile(tc.file, tc.size, tc.sizes); got != tc.want {
			t.Errorf("profileFile(%q, %d, %d) = %q, want %q", tc.file, tc.size, tc.sizes, got, tc.want)
		}
	}
}
