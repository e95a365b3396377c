//go:build !linux

package walcache

// dropPages does nothing where posix_fadvise is not available to Go.
func dropPages(uintptr, int64, int64) {}
