package clientserver

import (
	"testing"

	"umstore/wire"
)

// A frame whose payload is over wire.MaxPayload never reaches a proposal:
// handle refuses it, and gather never merges it into an earlier frame's
// entry, since merged entries stay far below the bound.
func TestMergedEntriesStayBelowMaxPayload(t *testing.T) {
	if maxMergedBytes >= wire.MaxPayload {
		t.Fatalf("maxMergedBytes (%d) must stay below wire.MaxPayload (%d), or gather could merge a frame handle must refuse", maxMergedBytes, wire.MaxPayload)
	}
	if err := checkPayloads(&wire.Publish{FirstSeq: 1, Payloads: [][]byte{make([]byte, wire.MaxPayload)}}); err != nil {
		t.Fatalf("a payload of exactly wire.MaxPayload: %v", err)
	}
	if err := checkPayloads(&wire.Publish{FirstSeq: 1, Payloads: [][]byte{{1}, make([]byte, wire.MaxPayload+1)}}); err == nil {
		t.Fatal("a payload over wire.MaxPayload passed")
	}
}

// gather never merges a damaged frame into an entry, nor frames with
// checksums with frames without: the damaged one is handled next (and
// refused), the other starts an entry of its own.
func TestGatherKeepsDamagedAndUncheckedFramesApart(t *testing.T) {
	pub := func(first uint64, checked, damaged bool) *wire.Publish {
		p := &wire.Publish{Source: "s", FirstSeq: first, Payloads: [][]byte{[]byte("x")}}
		if checked {
			p.Checksums = []uint32{wire.Checksum([]byte("x"))}
		}
		if damaged {
			p.Payloads[0] = []byte("y")
		}
		return p
	}
	tests := []struct {
		name   string
		head   *wire.Publish
		queued []*wire.Publish
		merged int // frames in the entry, the head included
	}{
		{"checked frames merge", pub(1, true, false), []*wire.Publish{pub(2, true, false), pub(3, true, false)}, 3},
		{"unchecked frames merge", pub(1, false, false), []*wire.Publish{pub(2, false, false)}, 2},
		{"a damaged frame stops the entry", pub(1, true, false), []*wire.Publish{pub(2, true, false), pub(3, true, true), pub(4, true, false)}, 2},
		{"an unchecked frame stops a checked entry", pub(1, true, false), []*wire.Publish{pub(2, false, false)}, 1},
		{"a checked frame stops an unchecked entry", pub(1, false, false), []*wire.Publish{pub(2, true, false)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			queued := make(chan frame, len(tt.queued))
			for _, p := range tt.queued {
				queued <- frame{m: p}
			}
			batch, next := gather([]*wire.Publish{tt.head}, queued)
			if len(batch) != tt.merged {
				t.Fatalf("merged %d frames, want %d", len(batch), tt.merged)
			}
			if tt.merged <= len(tt.queued) {
				if want := tt.queued[tt.merged-1]; next == nil || next.m != want {
					t.Fatalf("next frame %+v, want the one from %d", next, want.FirstSeq)
				}
			}
			pub := batchPublish(batch)
			if len(pub.Payloads) != len(batch) {
				t.Fatalf("the entry holds %d payloads, want %d", len(pub.Payloads), len(batch))
			}
			if tt.head.Checksums == nil {
				if pub.Checksums != nil {
					t.Fatalf("the entry of unchecked frames carries checksums %v", pub.Checksums)
				}
				return
			}
			for i, b := range pub.Payloads {
				if len(pub.Checksums) != len(pub.Payloads) || pub.Checksums[i] != wire.Checksum(b) {
					t.Fatalf("the entry carries checksums %v for %d payloads", pub.Checksums, len(pub.Payloads))
				}
			}
		})
	}
}
