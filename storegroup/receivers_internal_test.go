package storegroup

import (
	"errors"
	"testing"
	"time"

	"umstore/repository"
)

// The leader's view of receiver names: one live session per name, taken
// over after the activity timeout or once the holder left; a goodbye frees
// the name but not the expiry; a leader that was not looking expires no one.
func TestReceiverSessions(t *testing.T) {
	t.Parallel()
	const timeout = 30 * time.Second
	t0 := time.Unix(1000, 0)
	k := receiverKey{"s", "app"}
	rs := newReceiverSessions()
	rs.reset(nil, t0)
	if err := rs.claim(k, "a", t0, timeout); err != nil {
		t.Fatal(err)
	}
	var busy *errReceiverBusy
	if err := rs.claim(k, "b", t0.Add(29*time.Second), timeout); !errors.As(err, &busy) {
		t.Fatalf("a second live session took the name: %v", err)
	}
	if err := rs.claim(k, "a", t0.Add(time.Second), timeout); err != nil {
		t.Fatalf("the holder's own session was refused: %v", err)
	}
	if h := rs.touch(k, "a", t0.Add(2*time.Second)); h != heldByIt {
		t.Fatalf("touch by the holder: %v", h)
	}
	if h := rs.touch(k, "b", t0.Add(2*time.Second)); h != heldByOther {
		t.Fatalf("touch by another: %v", h)
	}
	if h := rs.touch(receiverKey{"s", "nobody"}, "a", t0); h != heldByNobody {
		t.Fatalf("touch of an unknown name: %v", h)
	}
	// Silent for the timeout: expired (the checks come every tick).
	now := t0.Add(2 * time.Second)
	for ; now.Before(t0.Add(32 * time.Second)); now = now.Add(time.Second) {
		if got := rs.silent(now, timeout); len(got) != 0 {
			t.Fatalf("expired at %v, %v after the last touch", now, now.Sub(t0.Add(2*time.Second)))
		}
	}
	if got := rs.silent(now, timeout); len(got) != 1 || got[0].session != "a" {
		t.Fatalf("silent = %+v, want a", got)
	}
	rs.forget(k, "a")
	if h := rs.touch(k, "a", now); h != heldByNobody {
		t.Fatalf("after the expiry the old session still holds the name: %v", h)
	}

	// A goodbye frees the name at once; the expiry still comes.
	t1 := now
	_ = rs.claim(k, "c", t1, timeout)
	rs.leave(k, "c")
	if err := rs.claim(receiverKey{"s", "other"}, "x", t1, timeout); err != nil {
		t.Fatal(err)
	}
	if h := rs.touch(k, "c", t1); h != heldByNobody {
		t.Fatalf("a session that left still holds the name: %v", h)
	}
	rs.leave(k, "c")
	if got := rs.silent(t1.Add(time.Second), timeout); len(got) != 0 {
		t.Fatalf("expired at once after a goodbye: %+v", got)
	}
	if err := rs.claim(k, "d", t1.Add(time.Second), timeout); err != nil {
		t.Fatalf("the name was not free after a goodbye: %v", err)
	}

	// A leader that did not look for a while gives everyone a fresh start.
	if got := rs.silent(t1.Add(time.Hour), timeout); len(got) != 0 {
		t.Fatalf("a paused leader expired %+v", got)
	}
	// A new leader treats the recorded active receivers as just heard from.
	rs.reset([]recordedReceiver{{key: k, session: "d"}}, t1)
	if h := rs.touch(k, "d", t1); h != heldByIt {
		t.Fatalf("after a reset the recorded session does not hold the name: %v", h)
	}
}

// What a paced source with active paced receivers releases: what they all
// consumed, and, when blocking, nothing more whatever the limits say.
func TestPacedRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		mode         repository.Pacing
		consumed     uint64
		limit        uint64 // what the retention limits would release
		want         uint64
		wantReason   string
		limitsReason string
	}{
		{"blocking, limits ask more than consumed", repository.PacingBlocking, 40, 90, 40, reasonConsumed, "messages"},
		{"blocking, limits ask less", repository.PacingBlocking, 40, 10, 40, reasonConsumed, "messages"},
		{"blocking, nothing consumed", repository.PacingBlocking, 0, 90, 0, reasonConsumed, "messages"},
		{"non-blocking, limits win", repository.PacingNonBlocking, 40, 90, 90, "messages", "messages"},
		{"non-blocking, consumed wins", repository.PacingNonBlocking, 40, 10, 40, reasonConsumed, "messages"},
		{"non-blocking, no limit", repository.PacingNonBlocking, 40, 0, 40, reasonConsumed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := pacedRelease(repository.PacingState{Mode: tc.mode, Holders: 1, ConsumedThrough: tc.consumed}, tc.limit, tc.limitsReason)
			if got != tc.want || why != tc.wantReason {
				t.Errorf("release through %d (%s), want %d (%s)", got, why, tc.want, tc.wantReason)
			}
		})
	}
}
