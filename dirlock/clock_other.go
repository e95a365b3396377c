//go:build !linux

package dirlock

import "time"

var processStart = time.Now()

// sinceBoot falls back to Go's monotonic clock outside Linux.
func sinceBoot() time.Duration { return time.Since(processStart) }
