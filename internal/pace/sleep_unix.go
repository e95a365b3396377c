//go:build unix

package pace

import (
	"syscall"
	"time"
)

// sleep blocks the calling thread for d with nanosleep (the Go runtime
// hands the thread's other work to another one meanwhile).
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
