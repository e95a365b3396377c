package dirlock

import (
	"time"

	"golang.org/x/sys/unix"
)

// sinceBoot is the holder's clock for its own view of the lease. Linux's
// CLOCK_BOOTTIME keeps counting while the process is stopped and while the
// machine is suspended (CLOCK_MONOTONIC, behind Go's monotonic time, stops
// during suspend), so a holder that wakes up late sees that its lease is
// too old.
func sinceBoot() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Since(processStart)
	}
	return time.Duration(ts.Nano())
}

var processStart = time.Now()
