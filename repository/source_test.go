package repository

import (
	"reflect"
	"testing"
)

func TestSourceStateAdmit(t *testing.T) {
	tests := []struct {
		name      string
		start     sourceState
		seq       uint64
		wantStore bool
		wantGap   *Range
		wantGaps  []Range
		wantHigh  uint64
		wantLow   uint64
	}{
		{"first message at 1", sourceState{}, 1, true, nil, nil, 1, 1},
		{"first message at 4", sourceState{}, 4, true, &Range{1, 3}, []Range{{1, 3}}, 4, 4},
		{"next in order", sourceState{HighSeq: 4, LowSeq: 1, Count: 4}, 5, true, nil, nil, 5, 1},
		{"jump", sourceState{HighSeq: 4, LowSeq: 1, Count: 4}, 9, true, &Range{5, 8}, []Range{{5, 8}}, 9, 1},
		{"jump keeps older gaps first", sourceState{HighSeq: 4, LowSeq: 1, Count: 3, Gaps: []Range{{2, 2}}}, 6, true, &Range{5, 5}, []Range{{2, 2}, {5, 5}}, 6, 1},
		{"duplicate", sourceState{HighSeq: 4, LowSeq: 1, Count: 4}, 2, false, nil, nil, 4, 1},
		{"duplicate next to a gap", sourceState{HighSeq: 9, LowSeq: 1, Count: 5, Gaps: []Range{{5, 8}}}, 4, false, nil, []Range{{5, 8}}, 9, 1},
		{"fill whole gap", sourceState{HighSeq: 9, LowSeq: 1, Count: 8, Gaps: []Range{{5, 5}}}, 5, true, nil, []Range{}, 9, 1},
		{"fill gap start", sourceState{HighSeq: 9, LowSeq: 1, Count: 5, Gaps: []Range{{5, 8}}}, 5, true, nil, []Range{{6, 8}}, 9, 1},
		{"fill gap end", sourceState{HighSeq: 9, LowSeq: 1, Count: 5, Gaps: []Range{{5, 8}}}, 8, true, nil, []Range{{5, 7}}, 9, 1},
		{"split gap", sourceState{HighSeq: 20, LowSeq: 1, Count: 5, Gaps: []Range{{2, 3}, {5, 18}, {19, 19}}}, 10, true, nil, []Range{{2, 3}, {5, 9}, {11, 18}, {19, 19}}, 20, 1},
		{"fill below LowSeq", sourceState{HighSeq: 9, LowSeq: 7, Count: 3, Gaps: []Range{{1, 6}}}, 3, true, nil, []Range{{1, 2}, {4, 6}}, 9, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.start
			s.Gaps = append([]Range(nil), tt.start.Gaps...)
			store, gap := s.admit(tt.seq, 3)
			if store != tt.wantStore || !reflect.DeepEqual(gap, tt.wantGap) {
				t.Errorf("admit(%d) = %v, %v; want %v, %v", tt.seq, store, gap, tt.wantStore, tt.wantGap)
			}
			if len(s.Gaps) != len(tt.wantGaps) || (len(s.Gaps) > 0 && !reflect.DeepEqual(s.Gaps, tt.wantGaps)) {
				t.Errorf("gaps = %v, want %v", s.Gaps, tt.wantGaps)
			}
			if s.HighSeq != tt.wantHigh || s.LowSeq != tt.wantLow {
				t.Errorf("high/low = %d/%d, want %d/%d", s.HighSeq, s.LowSeq, tt.wantHigh, tt.wantLow)
			}
			wantCount, wantBytes := tt.start.Count, tt.start.Bytes
			if tt.wantStore {
				wantCount, wantBytes = wantCount+1, wantBytes+3
			}
			if s.Count != wantCount || s.Bytes != wantBytes {
				t.Errorf("count/bytes = %d/%d, want %d/%d", s.Count, s.Bytes, wantCount, wantBytes)
			}
			if store && !s.holds(tt.seq) {
				t.Errorf("holds(%d) = false after storing it", tt.seq)
			}
		})
	}
}

func TestSourceStateReleaseGaps(t *testing.T) {
	tests := []struct {
		name     string
		gaps     []Range
		through  uint64
		wantGaps []Range
	}{
		{"no gaps", nil, 5, nil},
		{"all below", []Range{{2, 3}, {5, 6}}, 8, nil},
		{"ends at through", []Range{{2, 3}, {5, 8}}, 8, nil},
		{"straddles", []Range{{2, 3}, {5, 9}, {12, 14}}, 7, []Range{{8, 9}, {12, 14}}},
		{"straddles by one", []Range{{5, 9}}, 8, []Range{{9, 9}}},
		{"starts at through", []Range{{2, 3}, {7, 9}}, 7, []Range{{8, 9}}},
		{"all above", []Range{{5, 6}, {9, 9}}, 4, []Range{{5, 6}, {9, 9}}},
		{"from 1 (joined late)", []Range{{1, 9}}, 3, []Range{{4, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceState{HighSeq: 20, TrimmedThrough: 1, Gaps: append([]Range(nil), tt.gaps...)}
			s.releaseGaps(tt.through)
			if !reflect.DeepEqual(s.Gaps, tt.wantGaps) {
				t.Errorf("gaps = %v, want %v", s.Gaps, tt.wantGaps)
			}
			if s.TrimmedThrough != tt.through {
				t.Errorf("TrimmedThrough = %d, want %d", s.TrimmedThrough, tt.through)
			}
			// At or below the point released, nothing is held and nothing
			// is admitted again, even by code that ignores TrimmedThrough.
			for seq := uint64(1); seq <= tt.through; seq++ {
				if s.holds(seq) {
					t.Errorf("holds(%d) after releasing through %d", seq, tt.through)
				}
				if store, _ := s.admit(seq, 1); store {
					t.Errorf("admit(%d) stores a message released through %d", seq, tt.through)
				}
			}
		})
	}
}

func TestSourceStateEncoding(t *testing.T) {
	in := sourceState{HighSeq: 1 << 40, LowSeq: 3, Count: 7, Bytes: 1234, Gaps: []Range{{1, 2}, {5, 9}},
		Session: "s", Created: -5, LastRegister: 1 << 62, TrimmedThrough: 2, ExpiredSession: "old", ExpiredUnixNano: -7}
	b, err := encodeState(&in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("state round trip: %+v, want %+v", out, in)
	}
	if _, err := decodeState([]byte{0xc1}); err == nil {
		t.Error("decodeState accepted garbage")
	}
}
