package repository

import (
	"errors"
	"fmt"
	"testing"
)

// An Unpublished range is reported apart from the gaps it covers, only
// while the group does not hold its numbers, only from the session holding
// the source, and not below what retention released; it survives a
// reopen and changes the digest only when recorded.
func TestUnpublishedRange(t *testing.T) {
	reg := Register{Source: "s", Session: "p2", UnixNano: 1}
	for _, tc := range []struct {
		name  string
		cmds  []any
		want  []Range // SourceInfo.Unpublished
		err   error   // of the last command
		gaps  int
		trims uint64
	}{
		{"the jump is unpublished", []any{
			Register{Source: "s", Session: "p1", UnixNano: 1}, PublishAs{Session: "p1", Publish: Publish{Source: "s", FirstSeq: 1, Payloads: payloads("a", 1, 10)}},
			reg, PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 101, Payloads: payloads("b", 101, 5)}},
			Unpublished{Source: "s", Session: "p2", From: 11, To: 100},
		}, []Range{{11, 100}}, nil, 1, 0},
		{"recorded before the publish that opens the gap", []any{
			reg, PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 1, Payloads: payloads("a", 1, 10)}},
			Unpublished{Source: "s", Session: "p2", From: 11, To: 100},
			PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 101, Payloads: payloads("b", 101, 5)}},
		}, []Range{{11, 100}}, nil, 1, 0},
		{"a number filled later is held, not unpublished", []any{
			reg, PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 1, Payloads: payloads("a", 1, 10)}},
			PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 101, Payloads: payloads("b", 101, 5)}},
			Unpublished{Source: "s", Session: "p2", From: 11, To: 100},
			Publish{Source: "s", FirstSeq: 50, Payloads: payloads("r", 50, 1)},
		}, []Range{{11, 49}, {51, 100}}, nil, 2, 0},
		{"a stale session records nothing", []any{
			reg, PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 1, Payloads: payloads("a", 1, 10)}},
			PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 101, Payloads: payloads("b", 101, 5)}},
			Unpublished{Source: "s", Session: "p1", From: 11, To: 100},
		}, nil, ErrStaleSession, 1, 0},
		{"retention releases it", []any{
			reg, PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 1, Payloads: payloads("a", 1, 10)}},
			PublishAs{Session: "p2", Publish: Publish{Source: "s", FirstSeq: 101, Payloads: payloads("b", 101, 5)}},
			Unpublished{Source: "s", Session: "p2", From: 11, To: 100},
			Trim{Source: "s", Through: 50},
		}, []Range{{51, 100}}, nil, 1, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, tc.cmds...))
			if last := res[len(res)-1].Err; !errors.Is(last, tc.err) {
				t.Fatalf("last command: %v, want %v", last, tc.err)
			}
			before := mustDigest(t, r)
			r = reopen(t, r)
			if mustDigest(t, r) != before {
				t.Fatal("digest changed across a reopen")
			}
			info, _, err := r.Source("s")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(info.Unpublished) != fmt.Sprint(tc.want) || len(info.Gaps) != tc.gaps || info.TrimmedThrough != tc.trims {
				t.Fatalf("unpublished %v, gaps %v, trimmed %d; want %v, %d gap(s), %d", info.Unpublished, info.Gaps, info.TrimmedThrough, tc.want, tc.gaps, tc.trims)
			}
		})
	}
}
