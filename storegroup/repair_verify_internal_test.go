package storegroup

import (
	"reflect"
	"testing"

	"umstore/repository"
	"umstore/wire"
)

func TestCommonRanges(t *testing.T) {
	t.Parallel()
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

// A pass compares about verifyBudgetBytes of payload with each other group:
// many small messages are capped by count, large ones by bytes, and a
// message larger than the whole budget is still compared, one per pass.
func TestVerifyCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		budget        int
		count, bytes  uint64
		want, wantAvg int
	}{
		{"64 B messages: the count cap", verifyBudgetBytes, 1000, 64000, verifyBudget, 64},
		{"1 KiB messages", verifyBudgetBytes, 1000, 1024000, verifyBudgetBytes / 1024, 1024},
		{"8 MiB messages: one", verifyBudgetBytes, 2, 16 << 20, 1, 8 << 20},
		{"half the budget left", verifyBudgetBytes / 2, 1000, 1024000, verifyBudgetBytes / 2048, 1024},
		{"empty payloads", verifyBudgetBytes, 1000, 0, verifyBudget, 1},
		{"nothing held", verifyBudgetBytes, 0, 0, verifyBudget, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, avg := verifyCount(tc.budget, repository.SourceInfo{Count: tc.count, Bytes: tc.bytes})
			if got != tc.want || avg != tc.wantAvg {
				t.Errorf("verifyCount = %d messages of %d bytes, want %d of %d", got, avg, tc.want, tc.wantAvg)
			}
		})
	}
}
