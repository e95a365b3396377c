package repository

import (
	"errors"
	"path/filepath"
	"testing"
)

// Two repositories holding the same messages over a range have equal range
// sums, whatever the batches they came in; one different payload changes
// the sum; a count limit cuts the range at the last message hashed.
// It holds for repositories that copy payloads (inline runs) and for those
// that index the raft log (log runs), whose payloads are read from the log.
func TestRangeDigest(t *testing.T) {
	t.Run("inline runs", func(t *testing.T) { testRangeDigest(t, openApplied) })
	t.Run("log runs", func(t *testing.T) {
		testRangeDigest(t, func(t testing.TB, cmds ...any) *Repo {
			entries := logOf(1, cmds...)
			r := openIndexing(t, filepath.Join(t.TempDir(), "repo.db"), logOfEntries(entries))
			mustApply(t, r, entries)
			return r
		})
	})
}

func testRangeDigest(t *testing.T, open func(testing.TB, ...any) *Repo) {
	whole := open(t, Register{Source: "s", Session: "a"}, Publish{Source: "s", FirstSeq: 1, Payloads: payloads("m", 1, 100)})
	pieces := open(t, Register{Source: "s", Session: "a"},
		Publish{Source: "s", FirstSeq: 1, Payloads: payloads("m", 1, 40)},
		Publish{Source: "s", FirstSeq: 41, Payloads: payloads("m", 41, 60)})
	other := payloads("m", 1, 100)
	other[49] = []byte("reused")
	differs := open(t, Register{Source: "s", Session: "a"}, Publish{Source: "s", FirstSeq: 1, Payloads: other})

	sum := func(r *Repo, from, to uint64, max int) RangeSum {
		t.Helper()
		s, err := r.RangeDigest("s", from, to, max)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name    string
		a, b    RangeSum
		equal   bool
		through uint64
		count   uint64
	}{
		{"same messages, other batches", sum(whole, 1, 100, 0), sum(pieces, 1, 100, 0), true, 100, 100},
		{"one payload differs", sum(whole, 1, 100, 0), sum(differs, 1, 100, 0), false, 100, 100},
		{"the difference outside the range", sum(whole, 1, 49, 0), sum(differs, 1, 49, 0), true, 49, 49},
		{"cut by the count", sum(whole, 11, 100, 10), sum(pieces, 11, 100, 10), true, 20, 10},
		{"beyond what is held", sum(whole, 90, 500, 0), sum(pieces, 90, 500, 0), true, 500, 11},
		{"nothing held there", sum(whole, 200, 300, 0), sum(pieces, 200, 300, 0), true, 300, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a.Sum == tt.b.Sum) != tt.equal {
				t.Fatalf("sums equal: %v, want %v", tt.a.Sum == tt.b.Sum, tt.equal)
			}
			if tt.a.Through != tt.through || tt.a.Count != tt.count || tt.b.Through != tt.through || tt.b.Count != tt.count {
				t.Fatalf("through/count %d/%d and %d/%d, want %d/%d", tt.a.Through, tt.a.Count, tt.b.Through, tt.b.Count, tt.through, tt.count)
			}
		})
	}
	if _, err := whole.RangeDigest("nope", 1, 2, 0); !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
}
