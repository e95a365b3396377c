// Package receiver is the Go SDK for reading a source's messages back from
// umstore.
//
// A Receiver reads from every store group: each range is fetched from one
// group's leader, and any sequence number that group does not hold is asked
// of the other groups, so messages arrive in sequence order, each exactly
// once, whichever group holds them. A range that no reachable group holds is
// reported, never skipped silently.
package receiver
