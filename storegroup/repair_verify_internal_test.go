package storegroup

import (
	"reflect"
	"testing"

	"umstore/repository"
	"umstore/wire"
)

func TestCommonRanges(t *testing.T) {
	tests := []struct {
		name   string
		ours   repository.SourceInfo
		theirs wire.SourceState
		want   []seqRange
	}{
		{"same", repository.SourceInfo{LowSeq: 1, HighSeq: 10}, wire.SourceState{LowSeq: 1, HighSeq: 10}, []seqRange{{1, 10}}},
		{"they are ahead", repository.SourceInfo{LowSeq: 1, HighSeq: 10}, wire.SourceState{LowSeq: 1, HighSeq: 20}, []seqRange{{1, 10}}},
		{"we trimmed", repository.SourceInfo{LowSeq: 6, HighSeq: 10}, wire.SourceState{LowSeq: 1, HighSeq: 10}, []seqRange{{6, 10}}},
		{"their gap", repository.SourceInfo{LowSeq: 1, HighSeq: 10}, wire.SourceState{LowSeq: 1, HighSeq: 10, Gaps: []wire.Range{{From: 3, To: 4}}}, []seqRange{{1, 2}, {5, 10}}},
		{"our gap and theirs", repository.SourceInfo{LowSeq: 1, HighSeq: 10, Gaps: []repository.Range{{From: 8, To: 8}}}, wire.SourceState{LowSeq: 1, HighSeq: 10, Gaps: []wire.Range{{From: 3, To: 4}}}, []seqRange{{1, 2}, {5, 7}, {9, 10}}},
		{"nothing in common", repository.SourceInfo{LowSeq: 1, HighSeq: 5}, wire.SourceState{LowSeq: 6, HighSeq: 10}, nil},
		{"they hold nothing", repository.SourceInfo{LowSeq: 1, HighSeq: 5}, wire.SourceState{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commonRanges(tt.ours, tt.theirs); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
