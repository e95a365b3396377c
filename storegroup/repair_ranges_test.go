package storegroup

import (
	"reflect"
	"testing"

	"umstore/repository"
	"umstore/wire"
)

func TestMissingRanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ours   *repository.SourceInfo
		theirs wire.SourceState
		want   []seqRange
	}{
		{"unknown source: everything they hold", nil, wire.SourceState{LowSeq: 1, HighSeq: 10}, []seqRange{{1, 10}}},
		{"they hold nothing", nil, wire.SourceState{}, nil},
		{"we are behind", &repository.SourceInfo{LowSeq: 1, HighSeq: 5}, wire.SourceState{LowSeq: 1, HighSeq: 10}, []seqRange{{6, 10}}},
		{"we are ahead", &repository.SourceInfo{LowSeq: 1, HighSeq: 12}, wire.SourceState{LowSeq: 1, HighSeq: 10}, nil},
		{"our gap, which they hold", &repository.SourceInfo{LowSeq: 1, HighSeq: 10, Gaps: []repository.Range{{From: 3, To: 6}}}, wire.SourceState{LowSeq: 1, HighSeq: 10}, []seqRange{{3, 6}}},
		{"our gap, partly theirs too", &repository.SourceInfo{LowSeq: 1, HighSeq: 10, Gaps: []repository.Range{{From: 3, To: 6}}},
			wire.SourceState{LowSeq: 1, HighSeq: 10, Gaps: []wire.Range{{From: 4, To: 5}}}, []seqRange{{3, 3}, {6, 6}}},
		{"our gap below our low (joined late)", &repository.SourceInfo{LowSeq: 101, HighSeq: 150, Gaps: []repository.Range{{From: 1, To: 100}}},
			wire.SourceState{LowSeq: 1, HighSeq: 150}, []seqRange{{1, 100}}},
		{"released by our retention is not missing", &repository.SourceInfo{LowSeq: 51, HighSeq: 60, TrimmedThrough: 50},
			wire.SourceState{LowSeq: 1, HighSeq: 70}, []seqRange{{61, 70}}},
		{"everything released", &repository.SourceInfo{HighSeq: 60, TrimmedThrough: 60},
			wire.SourceState{LowSeq: 1, HighSeq: 60}, nil},
		{"they retain less than we miss", &repository.SourceInfo{LowSeq: 50, HighSeq: 60, Gaps: []repository.Range{{From: 1, To: 49}}},
			wire.SourceState{LowSeq: 20, HighSeq: 70}, []seqRange{{20, 49}, {61, 70}}},
		{"nothing above the sequence-number ceiling", &repository.SourceInfo{LowSeq: 1, HighSeq: 5},
			wire.SourceState{LowSeq: 1, HighSeq: 1<<64 - 1, Gaps: []wire.Range{{From: 8, To: 1<<64 - 2}}}, []seqRange{{6, 7}}},
		{"a source they hold only above the ceiling", nil,
			wire.SourceState{LowSeq: wire.MaxSeq + 1, HighSeq: wire.MaxSeq + 9}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingRanges(tt.ours, tt.theirs); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("missingRanges = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSubtract(t *testing.T) {
	t.Parallel()
	got := subtract([]seqRange{{1, 10}, {20, 30}}, []seqRange{{5, 6}, {9, 22}, {30, 40}})
	want := []seqRange{{1, 4}, {7, 8}, {23, 29}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("subtract = %v, want %v", got, want)
	}
}
