// Package memberauth proves, at the start of every raft connection, that
// both ends are stores of the same deployment, before raft reads a byte.
//
// raft's own transport accepts any peer that speaks its framing: a process
// that is not a member could dial a store's raft port and send
// AppendEntries, and the store would apply it. This package closes that
// door with a mutual challenge-response over the deployment's member
// secret, a random key that only the stores hold (clients and operators
// have credentials of their own):
//
//	dialer   -> acceptor  hello:     magic, version, dialer nonce, dialer name
//	acceptor -> dialer    challenge: magic, version, acceptor nonce, acceptor name,
//	                                 acceptor proof
//	dialer   -> acceptor  proof:     dialer proof
//	acceptor -> dialer    verdict:   one byte, "accepted"
//
// Each proof is an HMAC-SHA256, under a key derived from the secret, of a
// transcript holding both nonces, both names, the direction and, when the
// connection runs over TLS, keying material exported from the TLS session
// (channel binding, so a proof cannot be relayed into another session). The
// two directions use different labels, so an acceptor's proof is never
// valid as a dialer's. Fresh nonces on both sides make a recorded
// handshake useless. Proofs are compared in constant time, every field has
// a fixed or small bounded length read before anything is allocated, and a
// refused peer learns nothing but a closed connection.
//
// What it does not do: without TLS the connection after the handshake is
// plain TCP, which someone on the path between two hosts can read and
// alter. The handshake stops strangers who dial in, not a network that
// lies; for that, run the deployment with TLS.
package memberauth
