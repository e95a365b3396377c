package memberauth

import (
	"bytes"
	"io"
	"testing"
)

// rw feeds a handshake side fixed input and swallows its output.
type rw struct {
	io.Reader
	io.Writer
}

// FuzzAccept feeds arbitrary bytes to the accepting side, as a stranger on
// the raft port would: it must never panic, never accept, and never write
// more than its challenge.
//
//	go test ./internal/memberauth -fuzz FuzzAccept
func FuzzAccept(f *testing.F) {
	f.Add(appendHello(nil, bytes.Repeat([]byte{1}, nonceSize), "G1S1"))
	f.Add(append(appendHello(nil, bytes.Repeat([]byte{2}, nonceSize), "x"), bytes.Repeat([]byte{3}, proofSize)...))
	f.Add([]byte{0, 1, 2, 3, 4})
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		peer, err := Accept(rw{bytes.NewReader(in), &out}, Config{Secret: secretA, Self: "G1S2"})
		if err == nil {
			t.Fatalf("accepted %q from arbitrary input", peer)
		}
		if max := len(magic) + 1 + nonceSize + 1 + MaxName + proofSize; out.Len() > max {
			t.Fatalf("wrote %d bytes to an unproven peer, more than a challenge (%d)", out.Len(), max)
		}
	})
}

// FuzzDial feeds arbitrary bytes to the dialing side, as a stranger
// listening on a member's address would answer: it must never panic and
// never believe it reached a member.
//
//	go test ./internal/memberauth -fuzz FuzzDial
func FuzzDial(f *testing.F) {
	f.Add(append(appendHello(nil, bytes.Repeat([]byte{1}, nonceSize), "G1S2"), bytes.Repeat([]byte{9}, proofSize+1)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		peer, err := Dial(rw{bytes.NewReader(in), io.Discard}, Config{Secret: secretA, Self: "G1S1"})
		if err == nil {
			t.Fatalf("dialer believed %q proved membership from arbitrary input", peer)
		}
	})
}
