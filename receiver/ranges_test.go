package receiver

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"umstore/wire"
)

// A chunk finds the holes between the messages it holds, whatever the
// width of its range: it keeps messages, not a slot per sequence number.
func TestChunkHoles(t *testing.T) {
	t.Parallel()
	const top = math.MaxUint64
	tests := []struct {
		from, through uint64
		held          []uint64
		want          []Range
	}{
		{10, 11, []uint64{10, 11}, nil},
		{10, 10, nil, []Range{{10, 10}}},
		{10, 14, []uint64{10, 13}, []Range{{11, 12}, {14, 14}}},
		{10, 12, nil, []Range{{10, 12}}},
		{1, 4_000_000_000, []uint64{1, 2, 3}, []Range{{4, 4_000_000_000}}},
		{1, top, []uint64{1, 5}, []Range{{2, 4}, {6, top}}},
		{1, top, []uint64{top}, []Range{{1, top - 1}}},
		{top, top, nil, []Range{{top, top}}},
		{top, top, []uint64{top}, nil},
	}
	for _, tt := range tests {
		c := chunk{from: tt.from, through: tt.through}
		var msgs []wire.Msg
		for _, s := range tt.held {
			msgs = append(msgs, wire.Msg{Seq: s})
		}
		c.add(msgs)
		if got := c.holes(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("[%d, %d] holding %v: holes %v, want %v", tt.from, tt.through, tt.held, got, tt.want)
		}
	}
}

// Messages from several replies merge in order, each once, the first
// payload for a sequence number kept; cutting the chunk drops what lies
// beyond its new end.
func TestChunkAddAndCut(t *testing.T) {
	t.Parallel()
	c := chunk{from: 5, through: math.MaxUint64}
	c.add([]wire.Msg{{Seq: 5, Payload: []byte("a")}, {Seq: 9, Payload: []byte("a")}, {Seq: 3}})
	c.add([]wire.Msg{{Seq: 7, Payload: []byte("b")}, {Seq: 9, Payload: []byte("b")}, {Seq: math.MaxUint64, Payload: []byte("b")}})
	var got []string
	for _, m := range c.msgs {
		got = append(got, fmt.Sprintf("%d%s", m.Seq, m.Payload))
	}
	if want := []string{"5a", "7b", "9a", "18446744073709551615b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
	c.cut(8)
	if len(c.msgs) != 2 || c.through != 8 || !reflect.DeepEqual(c.holes(), []Range{{6, 6}, {8, 8}}) {
		t.Fatalf("after cut(8): through %d, %d messages, holes %v", c.through, len(c.msgs), c.holes())
	}
}

func TestAppendRangesMerges(t *testing.T) {
	t.Parallel()
	got := appendRanges([]Range{{1, 3}}, []Range{{4, 5}, {7, 7}, {8, 9}})
	want := []Range{{1, 5}, {7, 9}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s := (&MissingError{Ranges: want}).Error(); s != "messages held by no reachable store group: 1-5, 7-9" {
		t.Fatalf("MissingError text %q", s)
	}
}
