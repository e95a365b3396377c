// Package receiver is the Go SDK for reading a source's messages back from
// umstore.
//
// A Receiver reads from every store group: each range is fetched from one
// group's leader, and any sequence number that group does not hold is asked
// of the other groups, so messages arrive in sequence order, each exactly
// once, whichever group holds them. A range that no reachable group holds is
// reported, never skipped silently.
//
// A read keeps the messages it fetched and the ranges it misses, never a
// slot per sequence number, so its memory follows what the source holds,
// not the width of the range asked for: reading [1, 2^64-1] of a small
// source is as cheap as reading what it holds.
package receiver
