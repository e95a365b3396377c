package repository

import (
	"fmt"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// msgCursor on its own: seek from every position, and at in any order.
func TestMsgCursor(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1, pub("a", 1, 3), pub("a", 5, 5), pub("a", 12, 1)))
	if got := spans(t, r, "a"); got != "1-3 5-9 12" {
		t.Fatalf("runs %q", got)
	}
	held := map[uint64]bool{1: true, 2: true, 3: true, 5: true, 6: true, 7: true, 8: true, 9: true, 12: true}
	err := r.view(func(tx *bolt.Tx) error {
		msgs := tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs)
		for target := uint64(0); target <= 14; target++ {
			var want []uint64
			for seq := target; seq <= 14; seq++ {
				if held[seq] {
					want = append(want, seq)
				}
			}
			var got []uint64
			mc := newMsgCursor(msgs)
			seq, p, ok, err := mc.seek(target)
			for ; ok; seq, p, ok, err = mc.next() {
				if string(p) != fmt.Sprintf("a-%d", seq) {
					t.Errorf("message %d reads %q", seq, p)
				}
				got = append(got, seq)
			}
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				t.Errorf("from %d: %v, want %v", target, got, want)
			}
		}
		mc := newMsgCursor(msgs)
		for _, seq := range []uint64{7, 8, 3, 4, 9, 12, 13, 1, 6, 6, 10, 5, 2, 0, 11, 8} {
			p, ok, err := mc.at(seq)
			if err != nil {
				return err
			}
			if ok != held[seq] || (ok && string(p) != fmt.Sprintf("a-%d", seq)) {
				t.Errorf("at(%d) = %q, %v; held: %v", seq, p, ok, held[seq])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
