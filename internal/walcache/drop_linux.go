package walcache

import "golang.org/x/sys/unix"

// dropPages drops the clean cached pages of [off, off+n) of fd; dirty
// pages are left for writeback, so nothing unwritten is lost.
func dropPages(fd uintptr, off, n int64) {
	_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
}
