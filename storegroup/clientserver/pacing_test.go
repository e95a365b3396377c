package clientserver

import (
	"testing"

	"umstore/repository"
	"umstore/wire"
)

// A held-back publisher's batch skips the hold only when nothing in it is
// new to the group: every number held, or released by retention.
func TestOnlyHeld(t *testing.T) {
	info := repository.SourceInfo{Name: "s", HighSeq: 100, TrimmedThrough: 20, Gaps: []repository.Range{{From: 50, To: 54}}}
	frame := func(first uint64, n int) *wire.Publish {
		return &wire.Publish{Source: "s", FirstSeq: first, Payloads: make([][]byte, n)}
	}
	cases := []struct {
		name  string
		batch []*wire.Publish
		want  bool
	}{
		{"a resend of held messages", []*wire.Publish{frame(30, 10), frame(60, 41)}, true},
		{"a resend reaching into what retention released", []*wire.Publish{frame(10, 20)}, true},
		{"new messages after the highest held", []*wire.Publish{frame(95, 10)}, false},
		{"a held frame and a new one", []*wire.Publish{frame(30, 10), frame(101, 1)}, false},
		{"a number the group never received", []*wire.Publish{frame(45, 6)}, false},
		{"a frame wrapping past 2^64", []*wire.Publish{frame(^uint64(0), 2)}, false},
		{"another source's frame only", []*wire.Publish{{Source: "t", FirstSeq: 500, Payloads: make([][]byte, 1)}}, true},
	}
	for _, tc := range cases {
		if got := onlyHeld(info, tc.batch); got != tc.want {
			t.Errorf("%s: onlyHeld = %v, want %v", tc.name, got, tc.want)
		}
	}
}
