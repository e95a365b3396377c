package repository

import (
	"errors"
	"testing"
)

// Messages of a publisher session that no longer holds its source are
// refused, so a replaced publisher's late messages never take sequence
// numbers the new publisher uses.
func TestPublishAsRefusesAStaleSession(t *testing.T) {
	r := openTest(t)
	as := func(session string, first uint64, p string) PublishAs {
		return PublishAs{Session: session, Publish: Publish{Source: "s", FirstSeq: first, Payloads: [][]byte{[]byte(p)}}}
	}
	res := mustApply(t, r, logOf(1,
		as("old", 1, "a"), // unknown source: created, as Publish does
		Register{Source: "s", Session: "old", UnixNano: 1},
		as("old", 2, "b"),
		Register{Source: "s", Session: "new", UnixNano: 2},
		as("old", 3, "late"), // the replaced publisher's late message
		as("new", 3, "c"),
		ExpireSession{Source: "s", Session: "new", UnixNano: 3},
		as("new", 4, "after expiry"),
	))
	wantErr := []bool{false, false, false, false, true, false, false, true}
	for i, w := range wantErr {
		if got := res[i].Err != nil; got != w {
			t.Fatalf("entry %d: err %v, want error %v", i, res[i].Err, w)
		}
		if w && !errors.Is(res[i].Err, ErrStaleSession) {
			t.Fatalf("entry %d: %v, want ErrStaleSession", i, res[i].Err)
		}
	}
	msgs, err := r.Read("s", 1, 10, 0, 0)
	if err != nil || len(msgs) != 3 || string(msgs[2].Payload) != "c" {
		t.Fatalf("held %v, %v; want a, b, c", msgs, err)
	}
}
