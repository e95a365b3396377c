//go:build !unix

package pace

import "time"

// sleep is time.Sleep where nanosleep is not available.
func sleep(d time.Duration) { time.Sleep(d) }
