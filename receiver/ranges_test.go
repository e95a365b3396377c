package receiver

import (
	"reflect"
	"testing"
)

func TestHolesOf(t *testing.T) {
	tests := []struct {
		have []bool
		want []Range
	}{
		{[]bool{true, true}, nil},
		{[]bool{false}, []Range{{10, 10}}},
		{[]bool{true, false, false, true, false}, []Range{{11, 12}, {14, 14}}},
		{[]bool{false, false, false}, []Range{{10, 12}}},
	}
	for _, tt := range tests {
		if got := holesOf(tt.have, 10); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("holesOf(%v) = %v, want %v", tt.have, got, tt.want)
		}
	}
}

func TestAppendRangesMerges(t *testing.T) {
	got := appendRanges([]Range{{1, 3}}, []Range{{4, 5}, {7, 7}, {8, 9}})
	want := []Range{{1, 5}, {7, 9}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s := (&MissingError{Ranges: want}).Error(); s != "messages held by no reachable store group: 1-5, 7-9" {
		t.Fatalf("MissingError text %q", s)
	}
}
