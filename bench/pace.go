package main

import (
	"context"
	"syscall"
	"time"
)

// paceUntil waits until due, the way umpub paces its messages (umstore's
// internal/pace, which this module cannot import): a Go timer for all but
// the last 2 ms, then nanosleep. A Go timer alone fires about 0.5 ms late
// here, which would charge each JetStream message for the generator's own
// lateness where umpub's are not.
func paceUntil(ctx context.Context, due time.Time) error {
	if d := time.Until(due) - 2*time.Millisecond; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := time.Until(due); d >= 100*time.Microsecond { // shorter: sent at once, as umpub does
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
	return nil
}
