// Package pace waits until a message is due, for load generators that
// send at a fixed rate (umpub --rate) and time each message from when it
// was due.
//
// A Go timer on Linux fires when the runtime's network poller wakes, which
// it asks for in whole milliseconds: on the machine this project is
// measured on, time.After fired 0.55 ms late at the median and 1.1 ms at
// p99, whatever the interval. A generator pacing with it charges every
// message half a millisecond that no store caused, a large part of a
// latency goal of 1 ms. Until sleeps the last stretch with the operating
// system's nanosleep instead (0.1 ms late at the median there), on a
// thread of its own, and the rest with a timer, so that a long wait still
// ends when the context does. A wait shorter than early is not slept at
// all: at ten thousand messages a second and more, a system call per
// message took CPU from the stores on a two-core machine (p50 at 50,000
// msgs/s of 1 KiB 22 ms instead of 17), so such a message goes out up to
// early before it is due (and, timed from its due time, reads at most that
// much short).
//
// Files: pace.go, sleep_unix.go, sleep_other.go.
package pace

import (
	"context"
	"time"
)

// precise is the stretch before the due time slept with nanosleep: longer
// than a timer's lateness, short enough that a cancelled context is seen
// soon after.
const precise = 2 * time.Millisecond

// early is the shortest wait Until sleeps.
const early = 100 * time.Microsecond

// Until returns when due has come (or is less than early away), or ctx's
// error if it ends first.
func Until(ctx context.Context, due time.Time) error {
	if d := time.Until(due) - precise; d > 0 {
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
	if d := time.Until(due); d >= early {
		sleep(d)
	}
	return nil
}
