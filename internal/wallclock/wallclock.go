// Package wallclock is this process's wall clock: the system's, shifted by
// an offset that fault tests may set, standing in for a host whose clock
// is stepped forward or back (an operator's date command, a bad NTP
// source, a virtual machine resumed from a snapshot).
//
// A step moves the wall clock only. Go's time.Now also carries a monotonic
// reading, which no step moves, and every duration the stores measure in
// memory (publisher and receiver activity, age retention, lease renewals)
// is taken from it; those keep using time.Now. Now is for what a step does
// reach: the times written into a group's log or onto disk and read back,
// possibly by another process or after a restart, and compared with the
// wall clock then. Its result has no monotonic reading, so a comparison
// with it is a wall-clock comparison, as the real one would be.
package wallclock

import (
	"sync/atomic"
	"time"
)

var offset atomic.Int64 // nanoseconds

// Now returns the wall clock as this process sees it, without a monotonic
// reading.
func Now() time.Time { return time.Now().Round(0).Add(Offset()) }

// Offset is how far this process's wall clock is shifted from the system's.
func Offset() time.Duration { return time.Duration(offset.Load()) }

// Set shifts this process's wall clock to the system's plus d (0 puts it
// back) and returns the offset it replaced.
func Set(d time.Duration) time.Duration { return time.Duration(offset.Swap(int64(d))) }
