package repository

import (
	"errors"
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
		name         string
		gaps         []Range
		through      uint64
		wantGaps     []Range
		wantReleased []Range // the released gaps recorded (TrimmedThrough was 1, nothing recorded)
	}{
		{"no gaps", nil, 5, nil, nil},
		{"all below", []Range{{2, 3}, {5, 6}}, 8, nil, []Range{{2, 3}, {5, 6}}},
		{"ends at through", []Range{{2, 3}, {5, 8}}, 8, nil, []Range{{2, 3}, {5, 8}}},
		{"straddles", []Range{{2, 3}, {5, 9}, {12, 14}}, 7, []Range{{8, 9}, {12, 14}}, []Range{{2, 3}, {5, 7}}},
		{"straddles by one", []Range{{5, 9}}, 8, []Range{{9, 9}}, []Range{{5, 8}}},
		{"starts at through", []Range{{2, 3}, {7, 9}}, 7, []Range{{8, 9}}, []Range{{2, 3}, {7, 7}}},
		{"all above", []Range{{5, 6}, {9, 9}}, 4, []Range{{5, 6}, {9, 9}}, nil},
		{"from 1 (joined late)", []Range{{1, 9}}, 3, []Range{{4, 9}}, []Range{{1, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceState{HighSeq: 20, TrimmedThrough: 1, Gaps: append([]Range(nil), tt.gaps...)}
			s.releaseGaps(tt.through)
			if !reflect.DeepEqual(s.Gaps, tt.wantGaps) {
				t.Errorf("gaps = %v, want %v", s.Gaps, tt.wantGaps)
			}
			if !reflect.DeepEqual(s.ReleasedGaps, tt.wantReleased) {
				t.Errorf("released gaps = %v, want %v", s.ReleasedGaps, tt.wantReleased)
			}
			if s.TrimmedThrough != tt.through {
				t.Errorf("TrimmedThrough = %d, want %d", s.TrimmedThrough, tt.through)
			}
			// At or below the point released, nothing is held and nothing
			// is admitted again, even by code that ignores TrimmedThrough;
			// what was not in a gap was held until then.
			inGap := func(seq uint64) bool {
				for _, g := range tt.gaps {
					if g.From <= seq && seq <= g.To {
						return true
					}
				}
				return false
			}
			for seq := uint64(1); seq <= tt.through; seq++ {
				if s.holds(seq) {
					t.Errorf("holds(%d) after releasing through %d", seq, tt.through)
				}
				if got, want := s.heldReleased(seq), !inGap(seq); got != want {
					t.Errorf("heldReleased(%d) = %v after releasing through %d, want %v", seq, got, tt.through, want)
				}
				if store, _ := s.admit(seq, 1); store {
					t.Errorf("admit(%d) stores a message released through %d", seq, tt.through)
				}
			}
			if s.heldReleased(tt.through + 1) {
				t.Errorf("heldReleased(%d): above what was released", tt.through+1)
			}
		})
	}
}

// The released gaps' record keeps the newest maxReleasedGaps; below the
// oldest kept, whether a number was held is not known, and it counts as
// not held (a resend of it is answered lost, as before the record).
func TestSourceStateReleasedGapsAreBounded(t *testing.T) {
	var s sourceState
	n := uint64(maxReleasedGaps + 10)
	for i := uint64(0); i < n; i++ {
		s.Gaps = append(s.Gaps, Range{From: 10*i + 5, To: 10*i + 6}) // 5,6 15,16 ...
	}
	s.HighSeq = 10 * n
	for through := uint64(10); through <= 10*n; through += 10 { // one gap per trim
		s.releaseGaps(through)
	}
	if len(s.ReleasedGaps) != maxReleasedGaps {
		t.Fatalf("%d released gaps recorded, want %d", len(s.ReleasedGaps), maxReleasedGaps)
	}
	floor := 10*(n-maxReleasedGaps-1) + 6 // the last gap dropped ends there
	if s.ReleasedFloor != floor {
		t.Fatalf("floor %d, want %d", s.ReleasedFloor, floor)
	}
	for _, tc := range []struct {
		seq  uint64
		held bool
	}{
		{1, false}, {floor, false}, // below the record: unknown
		{floor + 1, true}, {floor + 8, true}, // held, above the floor
		{floor + 9, false},                // the oldest recorded gap
		{10 * n, true}, {10*n - 4, false}, // the newest
	} {
		if got := s.heldReleased(tc.seq); got != tc.held {
			t.Errorf("heldReleased(%d) = %v, want %v", tc.seq, got, tc.held)
		}
	}
	b, err := encodeState(&s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := decodeState(b)
	if err != nil || !reflect.DeepEqual(again.ReleasedGaps, s.ReleasedGaps) || again.ReleasedFloor != s.ReleasedFloor {
		t.Fatalf("decoded released gaps %v floor %d (%v), want %v floor %d", again.ReleasedGaps, again.ReleasedFloor, err, s.ReleasedGaps, s.ReleasedFloor)
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

// A record of released gaps this code could not have written is refused
// as damage when the state is read, never used to acknowledge numbers the
// group did not hold.
func TestDecodeStateRefusesABadReleasedRecord(t *testing.T) {
	tests := []struct {
		name  string
		floor uint64
		gaps  []Range
	}{
		{"floor above TrimmedThrough", 21, nil},
		{"gap above TrimmedThrough", 0, []Range{{18, 21}}},
		{"gap at the floor", 5, []Range{{5, 6}}},
		{"out of order", 0, []Range{{8, 9}, {2, 3}}},
		{"overlapping", 0, []Range{{2, 5}, {5, 6}}},
		{"reversed", 0, []Range{{6, 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceState{HighSeq: 30, TrimmedThrough: 20, ReleasedFloor: tt.floor, ReleasedGaps: tt.gaps}
			b, err := encodeState(&s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeState(b); !errors.Is(err, ErrFormat) {
				t.Fatalf("decodeState = %v, want ErrFormat", err)
			}
		})
	}
	ok := sourceState{HighSeq: 30, TrimmedThrough: 20, ReleasedFloor: 1, ReleasedGaps: []Range{{2, 3}, {5, 20}}}
	b, _ := encodeState(&ok)
	if _, err := decodeState(b); err != nil {
		t.Fatalf("a well-formed record: %v", err)
	}
}

// Gaps this code could not have written are refused as damage when the
// state is read.
func TestDecodeStateRefusesBadGaps(t *testing.T) {
	tests := []struct {
		name string
		gaps []Range
	}{
		{"reversed", []Range{{6, 5}}},
		{"from zero", []Range{{0, 3}}},
		{"out of order", []Range{{8, 9}, {2, 3}}},
		{"overlapping", []Range{{2, 5}, {5, 6}}},
		{"reaching HighSeq", []Range{{25, 30}}},
		{"above HighSeq", []Range{{31, 40}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceState{HighSeq: 30, Gaps: tt.gaps}
			b, err := encodeState(&s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeState(b); !errors.Is(err, ErrFormat) {
				t.Fatalf("decodeState = %v, want ErrFormat", err)
			}
		})
	}
	ok := sourceState{HighSeq: 30, Gaps: []Range{{1, 3}, {5, 5}, {7, 29}}}
	b, _ := encodeState(&ok)
	if _, err := decodeState(b); err != nil {
		t.Fatalf("well-formed gaps: %v", err)
	}
}
