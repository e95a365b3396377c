package repository

import (
	"errors"
	"reflect"
	"testing"
)

// A Publish or PublishAs reaching above MaxSeq is refused at apply, whoever
// proposed it (a client through a store, or an entry forged into the log),
// and changes nothing: the source's sequence numbers cannot be used up for
// good, and the next publisher resumes where the source stood.
func TestPublishAboveTheCeilingIsRefused(t *testing.T) {
	as := func(p Publish) PublishAs { return PublishAs{Session: "owner", Publish: p} }
	tests := []struct {
		name string
		cmd  any
	}{
		{"one message at 2^64-1", pub("s", ^uint64(0), 1)},
		{"one message at 2^64-2", pub("s", ^uint64(0)-1, 1)},
		{"a run wrapping past 2^64", pub("s", ^uint64(0)-1, 4)},
		{"one message just above the ceiling", pub("s", MaxSeq+1, 1)},
		{"a run ending just above the ceiling", pub("s", MaxSeq-2, 4)},
		{"a registered session's message at 2^64-1", as(pub("s", ^uint64(0), 1))},
		{"a registered session's run ending just above the ceiling", as(pub("s", MaxSeq, 2))},
		{"a new source's first message above the ceiling", pub("new", MaxSeq+1, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openApplied(t, Register{Source: "s", Session: "owner", UnixNano: 1}, pub("s", 1, 3))
			before, err := r.Sources()
			if err != nil {
				t.Fatal(err)
			}
			digest := mustDigest(t, r)

			res := mustApply(t, r, logOf(3, tt.cmd))
			if !errors.Is(res[0].Err, ErrSeqCeiling) || !errors.Is(res[0].Err, ErrBadCommand) {
				t.Fatalf("Err = %v, want ErrSeqCeiling (and ErrBadCommand)", res[0].Err)
			}
			if res[0].Publish != nil {
				t.Fatalf("a refused Publish has a result: %+v", res[0].Publish)
			}
			if r.AppliedIndex() != 3 {
				t.Fatalf("AppliedIndex = %d, want 3: a refused entry still counts as applied", r.AppliedIndex())
			}
			after, err := r.Sources()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after, before) || mustDigest(t, r) != digest {
				t.Fatalf("the refused entry changed the repository:\n  before %+v\n  after  %+v", before, after)
			}

			// The owner's next messages are accepted as they would have been.
			next := mustApply(t, r, logOf(4, as(pub("s", 4, 2))))
			want := &PublishResult{Source: "s", FirstSeq: 4, LastSeq: 5, Stored: 2, HighSeq: 5}
			if next[0].Err != nil || !reflect.DeepEqual(next[0].Publish, want) {
				t.Fatalf("the owner's next Publish: %+v, err %v; want %+v", next[0].Publish, next[0].Err, want)
			}
		})
	}
}

// The ceiling itself is a valid sequence number: a source may end exactly
// there.
func TestPublishUpToTheCeilingIsStored(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1, pub("s", MaxSeq-1, 2)))
	want := &PublishResult{Source: "s", FirstSeq: MaxSeq - 1, LastSeq: MaxSeq, Stored: 2, HighSeq: MaxSeq, NewGap: &Range{From: 1, To: MaxSeq - 2}}
	if res[0].Err != nil || !reflect.DeepEqual(res[0].Publish, want) {
		t.Fatalf("got %+v, err %v; want %+v", res[0].Publish, res[0].Err, want)
	}
	if got := heldSeqs(t, r, "s"); !reflect.DeepEqual(got, []uint64{MaxSeq - 1, MaxSeq}) {
		t.Fatalf("held %v", got)
	}
}
