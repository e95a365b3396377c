// Package e2e holds end-to-end tests that build the real binaries and drive
// them as a user would: processes, TCP on loopback, files on disk.
package e2e
