package memberauth

import (
	"bytes"
	"testing"
)

// A request's proofs hold for exactly one request: another secret, nonce,
// name, body, binding or verdict gives another proof, the dialer's and
// the acceptor's never stand for each other, and neither is the raft
// handshake's proof over the same nonces and names.
func TestRequestProofs(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	base := Request{Dialer: "G1S1", Acceptor: "G1S3", DialerNonce: NewNonce(), AcceptorNonce: NewNonce(), Body: []byte("G1S1 10.0.0.4:14011 10.0.0.4:15011")}
	verdict := []byte("accepted")
	dp, ap := base.DialerProof(secret), base.AcceptorProof(secret, verdict)
	if !ProofsEqual(dp, base.DialerProof(secret)) || !ProofsEqual(ap, base.AcceptorProof(secret, verdict)) {
		t.Fatal("the same request gives another proof")
	}
	if ProofsEqual(dp, ap) || ProofsEqual(ap, base.DialerProof(secret)) {
		t.Fatal("an acceptor's proof stands for a dialer's")
	}
	if ProofsEqual(dp, proof(deriveKey(secret), dialLabel, base.AcceptorNonce, base.DialerNonce, base.Dialer, base.Acceptor, nil)) {
		t.Fatal("a request proof equals the raft handshake's")
	}
	variants := map[string]func(q *Request) []byte{
		"another secret":         func(q *Request) []byte { return q.DialerProof(bytes.Repeat([]byte{8}, 32)) },
		"another dialer nonce":   func(q *Request) []byte { q.DialerNonce = NewNonce(); return q.DialerProof(secret) },
		"another acceptor nonce": func(q *Request) []byte { q.AcceptorNonce = NewNonce(); return q.DialerProof(secret) },
		"another dialer":         func(q *Request) []byte { q.Dialer = "G1S2"; return q.DialerProof(secret) },
		"another acceptor":       func(q *Request) []byte { q.Acceptor = "G1S2"; return q.DialerProof(secret) },
		"another body": func(q *Request) []byte {
			q.Body = []byte("G1S1 10.0.0.5:14011 10.0.0.5:15011")
			return q.DialerProof(secret)
		},
		"a binding": func(q *Request) []byte { q.Binding = []byte("tls"); return q.DialerProof(secret) },
	}
	for name, proofOf := range variants {
		q := base
		if ProofsEqual(dp, proofOf(&q)) {
			t.Errorf("%s: the same dialer proof", name)
		}
	}
	if ProofsEqual(ap, base.AcceptorProof(secret, []byte("refused"))) {
		t.Error("another verdict: the same acceptor proof")
	}
	if ProofsEqual(dp[:16], dp[:16]) || ProofsEqual(nil, nil) {
		t.Error("a short proof compares equal")
	}
	if n := NewNonce(); len(n) != NonceSize || bytes.Equal(n, NewNonce()) {
		t.Error("nonces are not fresh")
	}
}
