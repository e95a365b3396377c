package testmain

import "testing"

// Slow marks a test that takes seconds of waiting (an election after a
// fault, a lease running out, a child process's restart): -short skips it,
// the full run (go test ./..., CI's first and race runs) keeps it. The
// short run is the quick check while editing; it still covers each
// package's common paths.
func Slow(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow: runs without -short")
	}
}
