package memberauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
)

// Requests between members outside the raft handshake.
//
// Some things a store asks of the other members of its group are not raft
// traffic but must be just as authenticated: a store started on a new
// server tells its group where it now listens, and a stranger who could say
// that for a member would take the member over. Such a request travels on
// the client port (wire.MemberMove) in two rounds:
//
//	dialer   -> acceptor  request, dialer nonce        (no proof yet)
//	acceptor -> dialer    challenge: acceptor nonce
//	dialer   -> acceptor  request, both nonces, dialer proof
//	acceptor -> dialer    verdict, acceptor proof
//
// The proofs are HMAC-SHA256s under the same key as the handshake's, over
// their own labels (so no proof of one kind passes for another), both
// nonces, both names, the request's bytes and the verdict, and the TLS
// channel binding when there is one. A fresh acceptor nonce makes a
// recorded request useless; the acceptor's proof over the verdict keeps a
// stranger from answering in a member's place.

const (
	requestDialLabel   = "umstore member request: dialer v1"
	requestAcceptLabel = "umstore member request: acceptor v1"
)

// NonceSize is the length of the nonces a request carries.
const NonceSize = nonceSize

// NewNonce returns a fresh random nonce of NonceSize bytes.
func NewNonce() []byte {
	b := make([]byte, NonceSize)
	_, _ = rand.Read(b) // crypto/rand never fails (it panics instead)
	return b
}

// Request is one member's request of another, as both sides see it once
// the acceptor has issued its challenge.
type Request struct {
	Dialer, Acceptor           string // the two stores' names
	DialerNonce, AcceptorNonce []byte // NonceSize bytes each
	// Body is the request's canonical bytes: every field the acceptor acts
	// on must be in it.
	Body []byte
	// Binding is keying material exported from the TLS session the request
	// travels on, empty without TLS.
	Binding []byte
}

// DialerProof is the dialer's proof that it holds secret and asks for
// Body on this challenge.
func (q Request) DialerProof(secret []byte) []byte {
	return requestMAC(deriveKey(secret), requestDialLabel, q.AcceptorNonce, q.DialerNonce, q.Dialer, q.Acceptor, q.Binding, q.Body, nil)
}

// AcceptorProof is the acceptor's proof that it holds secret and gave
// verdict to this request.
func (q Request) AcceptorProof(secret, verdict []byte) []byte {
	return requestMAC(deriveKey(secret), requestAcceptLabel, q.DialerNonce, q.AcceptorNonce, q.Dialer, q.Acceptor, q.Binding, q.Body, verdict)
}

// ProofsEqual compares two proofs in constant time.
func ProofsEqual(a, b []byte) bool { return len(a) == proofSize && hmac.Equal(a, b) }

// requestMAC is the HMAC of a request transcript, each part
// length-prefixed.
func requestMAC(key []byte, label string, first, second []byte, dialer, acceptor string, binding, body, verdict []byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte(label), first, second, []byte(dialer), []byte(acceptor), binding, body, verdict} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		m.Write(n[:])
		m.Write(part)
	}
	return m.Sum(nil)
}
