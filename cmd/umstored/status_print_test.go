package main

import (
	"bytes"
	"strings"
	"testing"

	"umstore/deploystatus"
)

// Source names and leader addresses come from the stores: the text output
// escapes any that would send control sequences to the terminal or forge a
// row, and leaves ordinary names alone.
func TestStatusEscapesNamesFromTheStores(t *testing.T) {
	st := deploystatus.Summary{
		Groups: []deploystatus.SummaryGroup{{
			Index:  1,
			Leader: "10.0.0.9:1\x1b]0;owned\x07",
			Stores: []deploystatus.SummaryStore{{Name: "G1S1", Host: "A", Address: "127.0.0.1:15011", State: "leader"}},
			Sources: []deploystatus.Source{
				{Name: "orders", HighSeq: 5},
				{Name: "evil\x1b[2J\x1b[H", HighSeq: 7},
				{Name: "fake\n2  orders  999", HighSeq: 1},
				{Name: "csi\u009b31m", HighSeq: 2},
			},
		}},
		Publishing: true,
		Reason:     "1 of 1 groups have a leader",
	}
	var out bytes.Buffer
	printStatus(&out, st)
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07\u009b") {
		t.Errorf("control characters reach the terminal:\n%q", got)
	}
	for _, want := range []string{`"evil\x1b[2J\x1b[H"`, `"fake\n2  orders  999"`, `"csi\u009b31m"`, `leader: "10.0.0.9:1\x1b]0;owned\a"`, "1      orders                  5"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 12 {
		t.Errorf("%d lines, want 12 (a name forged a line?):\n%s", n, got)
	}
}

// Receivers are printed per source, with their position, lag and state;
// their names are escaped like the sources'.
func TestStatusPrintsReceivers(t *testing.T) {
	st := deploystatus.Summary{
		Groups: []deploystatus.SummaryGroup{{
			Index:  1,
			Leader: "G1S1",
			Stores: []deploystatus.SummaryStore{{Name: "G1S1", Host: "A", Address: "127.0.0.1:15011", State: "leader"}},
			Sources: []deploystatus.Source{{Name: "orders", HighSeq: 3000, Receivers: []deploystatus.Receiver{
				{Name: "app1", Consumed: 1000, Lag: 2000, Active: true, Paced: true, LastActivity: "2026-01-02T03:04:05Z"},
				{Name: "gone\x1b[2J", Consumed: 3000},
			}}},
		}},
		Publishing: true,
	}
	var out bytes.Buffer
	printStatus(&out, st)
	got := out.String()
	for _, want := range []string{"RECEIVER", "app1", "1000", "2000", "active, paced", "2026-01-02T03:04:05Z", `"gone\x1b[2J"`, "expired"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("a receiver name reaches the terminal raw:\n%q", got)
	}
}
