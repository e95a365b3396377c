package storegroup

import (
	"reflect"
	"testing"
)

// A pass copies only what the pass before found missing too: a range that
// was on its way (filled by the publisher before the next pass) is never
// copied, and one that stays missing is copied the pass after it was
// first seen.
func TestStillMissing(t *testing.T) {
	t.Parallel()
	passes := []struct {
		name    string
		missing []seqRange
		copy    []seqRange
	}{
		{"first seen: wait a pass", []seqRange{{11, 20}}, nil},
		{"still missing, and more on its way", []seqRange{{11, 25}}, []seqRange{{11, 20}}},
		{"the publisher filled 21-25, a new tail on its way", []seqRange{{30, 31}}, nil},
		{"nothing missing", nil, nil},
		{"seen again after a pass with none: wait again", []seqRange{{30, 31}}, nil},
		{"stayed", []seqRange{{30, 31}}, []seqRange{{30, 31}}},
	}
	rp := &repairer{missing: map[missingKey][]seqRange{}}
	for _, p := range passes {
		if got := rp.stillMissing(2, "s", p.missing); !reflect.DeepEqual(got, p.copy) {
			t.Fatalf("%s: copy %v, want %v", p.name, got, p.copy)
		}
	}
	if got := rp.stillMissing(3, "s", []seqRange{{30, 31}}); got != nil {
		t.Fatalf("another group's view of the same source: copy %v, want nothing on its first sight", got)
	}
	if got := rp.stillMissing(2, "s", nil); got != nil || len(rp.missing) != 1 {
		t.Fatalf("after a pass with nothing missing: copy %v, %d sources remembered, want none and only group 3's", got, len(rp.missing))
	}
}
