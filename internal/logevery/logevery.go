// Package logevery keeps a repeated warning to one log line per interval,
// counting the ones it held back: a flood of refused clients or damaged
// frames must not flood the log too.
package logevery

import (
	"sync"
	"time"
)

// Every lets one log line through per interval and counts the others.
type Every struct {
	Interval time.Duration

	mu      sync.Mutex
	next    time.Time
	dropped int
}

// Allow reports whether to log now, and how many were suppressed since.
func (l *Every) Allow(now time.Time) (dropped int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.dropped++
		return 0, false
	}
	dropped, l.dropped = l.dropped, 0
	l.next = now.Add(l.Interval)
	return dropped, true
}
