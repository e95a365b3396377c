package repository

import (
	"errors"
	"testing"
)

func TestRead(t *testing.T) {
	r := openTest(t)
	sizes := map[uint64]int{1: 10, 2: 10, 3: 10, 5: 30, 6: 5, 9: 0, 10: 10}
	var cmds []any
	for _, seq := range []uint64{1, 2, 3, 5, 6, 9, 10} { // 4, 7, 8 missing
		cmds = append(cmds, Publish{Source: "a", FirstSeq: seq, Payloads: [][]byte{make([]byte, sizes[seq])}})
	}
	cmds = append(cmds, Register{Source: "empty"})
	mustApply(t, r, logOf(1, cmds...))

	runReadCases(t, r, "a", []readCase{
		{"everything", 0, ^uint64(0), 0, 0, []uint64{1, 2, 3, 5, 6, 9, 10}},
		{"range skips missing seqs", 3, 8, 0, 0, []uint64{3, 5, 6}},
		{"single seq", 5, 5, 0, 0, []uint64{5}},
		{"missing single seq", 4, 4, 0, 0, nil},
		{"beyond high", 11, 20, 0, 0, nil},
		{"from above to", 6, 5, 0, 0, nil},
		{"max count", 1, 10, 2, 0, []uint64{1, 2}},
		{"max bytes exactly reached", 1, 10, 0, 30, []uint64{1, 2, 3}},
		{"max bytes stops before exceeding", 1, 10, 0, 29, []uint64{1, 2}},
		{"first message even if too big", 5, 10, 0, 1, []uint64{5}},
		{"zero-length message fits", 6, 10, 0, 5, []uint64{6, 9}},
		{"count and bytes: count first", 1, 10, 1, 1000, []uint64{1}},
	}, func(seq uint64) int { return sizes[seq] })

	if msgs, err := r.Read("empty", 0, 100, 0, 0); err != nil || len(msgs) != 0 {
		t.Errorf("registered source without messages: %v, %v", msgs, err)
	}
	if _, err := r.Read("nobody", 0, 100, 0, 0); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("unknown source: %v, want ErrUnknownSource", err)
	}
	if _, ok, err := r.Source("nobody"); ok || err != nil {
		t.Errorf("Source(nobody) = %v, %v", ok, err)
	}
}

// Payloads are copied out of the read transaction: later writes must not
// change what a reader already holds.
func TestReadPayloadsAreCopies(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1, Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("first")}}))
	msgs, err := r.Read("a", 1, 1, 0, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Read: %v %v", msgs, err)
	}
	for i := uint64(2); i < 2000; i++ { // enough writes to reuse and remap pages
		mustApply(t, r, logOf(i, Publish{Source: "a", FirstSeq: i, Payloads: [][]byte{make([]byte, 512)}}))
	}
	if string(msgs[0].Payload) != "first" {
		t.Errorf("payload changed to %q", msgs[0].Payload)
	}
}
