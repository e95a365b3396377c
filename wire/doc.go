// Package wire is umstore's client protocol: the frames that publishers,
// receivers and stores exchange over TCP.
//
// A frame is a 4-byte big-endian length, then one type byte, then a msgpack
// body (arrays, not maps: field order is the format). The length counts the
// type byte and the body and is bounded by a maximum frame size, so a peer
// cannot make the other side allocate without limit.
//
// A connection starts with a handshake: the client sends Hello with the
// protocol version it speaks and the store answers Welcome (who it is) or an
// Error with CodeVersion. After that, requests carry a client-chosen ReqID
// and may be pipelined; replies name the ReqID they answer (a store answers
// one connection's requests in order, with subscription pushes in
// between).
//
// Frames grow by appending fields: Decode ignores fields past the ones this
// version knows and zeroes those a shorter array lacks, at every level
// (evolve.go), so peers of neighbouring versions understand each other.
// docs/protocol.md specifies every frame for implementers in other
// languages; testdata/protocol/frames.txt pins the bytes (golden_test.go).
//
// Decoding never panics on bad input: a malformed, unknown or oversized
// frame is reported as an error that wraps ErrMalformed, ErrUnknownType or
// ErrFrameTooLarge, and the server answers with an Error frame or closes the
// connection.
package wire
