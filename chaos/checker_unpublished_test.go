package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckUnpublished: the follower and the durable receiver may pass
// silently over a range their publisher declared never published (the
// receivers do, by design), but only over that range and only that
// source's; and a declared range must hold no acknowledged message.
func TestCheckUnpublished(t *testing.T) {
	// skipped is healthy(10) after which the publisher's second
	// incarnation resumed at 14 (11-13 skipped past its state file's
	// bound, never sent) and had 14-15 acknowledged; the follower and the
	// durable receiver went from 10 to 14.
	skipped := func() *History {
		h := durableHealthy()
		restartPublisher(h, 14, 15)
		d := h.Durable["s1"][1]
		for seq := uint64(14); seq <= 15; seq++ {
			p := makePayload("s1", seq, 2, 64)
			d.Handed = append(d.Handed, Handed{Seq: seq, Hash: payloadHash(p), PubInc: 2, At: d.Ended.Add(-time.Millisecond)})
		}
		return h
	}
	declared := func(src string, from, to uint64) Unpublished {
		return Unpublished{Source: src, Incarnation: 2, From: from, To: to, At: t0}
	}
	cases := []struct {
		name   string
		h      func() *History
		u      []Unpublished
		rules  []string // the rules that must be broken; none for a clean history
		wantIn string
	}{
		{name: "a silent skip nobody declared", h: skipped, rules: []string{"receiver", "durable"}, wantIn: "11-13 before 14"},
		{name: "the skip was declared never published", h: skipped, u: []Unpublished{declared("s1", 11, 13)}},
		{name: "declared in two pieces", h: skipped, u: []Unpublished{declared("s1", 12, 13), declared("s1", 11, 11)}},
		{name: "declared only in part", h: skipped, u: []Unpublished{declared("s1", 12, 13)}, rules: []string{"receiver", "durable"}, wantIn: "11-"},
		{name: "another source's declaration", h: skipped, u: []Unpublished{declared("s2", 11, 13)}, rules: []string{"receiver", "durable"}, wantIn: "11-13 before 14"},
		{name: "an acknowledged message declared never published", h: func() *History { return healthy(10) }, u: []Unpublished{declared("s1", 5, 7)}, rules: []string{"unpublished"}, wantIn: "declared 5-7 never published at " + t0.Format("15:04:05.000") + ", but 3 of them had been acknowledged: 5-7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h()
			h.AddUnpublished(tc.u)
			got := map[string]string{}
			for _, v := range Check(h).Violations {
				got[v.Rule] += v.Detail + "\n"
			}
			if len(tc.rules) == 0 && len(got) != 0 {
				t.Fatalf("want no violation, got %v", got)
			}
			for _, r := range tc.rules {
				if !strings.Contains(got[r], tc.wantIn) {
					t.Errorf("want a %s violation containing %q, got %v", r, tc.wantIn, got)
				}
			}
			if len(got) != len(tc.rules) {
				t.Errorf("violations of rules %v, want only %v", got, tc.rules)
			}
		})
	}
}

// TestScanPublisherLog: the ranges a publisher declared never published
// are read from its log, with the incarnation that declared them; its
// other lines about the skip (a range it waits to declare, or gives up
// on) declare nothing.
func TestScanPublisherLog(t *testing.T) {
	log := `### chaos: source=s1 incarnation=2
time=2026-12-04T22:45:54.112Z level=INFO msg="skipped the numbers up to the state file's bound that a silent group may hold; they are declared never published once every group has said what it holds" source=s1 incarnation=2 source=s1 from=553 to=4097 groups_waited_for=[2]
time=2026-12-04T22:45:54.278Z level=INFO msg="every group has said what it holds: declaring the skipped numbers never published" source=s1 incarnation=2 source=s1 from=615 to=4097
time=2026-12-04T22:46:09.335Z level=INFO msg="not declaring the skipped numbers never published: a group that answered late may hold some of them; they stay a gap" source=s1 incarnation=3 group=2 from=5773 to=8194
`
	path := filepath.Join(t.TempDir(), "publisher-s1.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := scanPublisherLogFile("s1", path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Source != "s1" || got[0].Incarnation != 2 || got[0].From != 615 || got[0].To != 4097 || got[0].At.IsZero() {
		t.Fatalf("declared = %+v, want 615-4097 of incarnation 2", got)
	}
}
