package memberauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sentinel errors, testable with errors.Is.
var (
	// ErrRefused means the peer did not prove membership: a wrong or
	// missing secret, a name that is not an allowed member, or a
	// transcript that does not check out.
	ErrRefused = errors.New("memberauth: peer did not prove membership")
	// ErrProtocol means the peer does not speak this handshake at all
	// (wrong magic or version, or a field out of bounds): typically a
	// stranger or a store of an older release.
	ErrProtocol = errors.New("memberauth: not a member handshake")
	// ErrConfig means the local configuration cannot run a handshake.
	ErrConfig = errors.New("memberauth: invalid configuration")
)

const (
	magic      = "UMSM" // umstore member
	version    = 1
	nonceSize  = 32
	proofSize  = sha256.Size
	accepted   = 0xA5
	keyLabel   = "umstore member key v1"
	dialLabel  = "umstore member proof: dialer v1"
	acceptLbl  = "umstore member proof: acceptor v1"
	helloFixed = len(magic) + 1 + nonceSize + 1
)

// MaxName is the longest store name a handshake carries.
const MaxName = 128

// MinSecret is the shortest member secret accepted: 128 bits.
const MinSecret = 16

// Config is one side's part in a handshake.
type Config struct {
	// Secret is the deployment's member secret, shared by every store.
	Secret []byte
	// Self is this store's name, sent to the peer.
	Self string
	// Allowed reports whether a peer of that name may connect (for raft:
	// the other members of this store's group). Nil allows any name that
	// proves knowledge of the secret.
	Allowed func(name string) bool
	// Binding, if set, is keying material both ends derive from the
	// connection underneath (TLS's ExportKeyingMaterial); the proofs then
	// hold only on that one connection.
	Binding []byte
}

func (c *Config) check() error {
	if len(c.Secret) < MinSecret {
		return fmt.Errorf("%w: the member secret is %d bytes; at least %d are needed", ErrConfig, len(c.Secret), MinSecret)
	}
	if c.Self == "" || len(c.Self) > MaxName {
		return fmt.Errorf("%w: the store name must be 1..%d bytes", ErrConfig, MaxName)
	}
	return nil
}

// Dial runs the dialing side of the handshake on rw and returns the
// acceptor's name. On any error the caller must close the connection.
func Dial(rw io.ReadWriter, cfg Config) (peer string, err error) {
	if err := cfg.check(); err != nil {
		return "", err
	}
	var dn [nonceSize]byte
	if _, err := rand.Read(dn[:]); err != nil {
		return "", err
	}
	if _, err := rw.Write(appendHello(nil, dn[:], cfg.Self)); err != nil {
		return "", fmt.Errorf("memberauth: send hello: %w", err)
	}
	an, peer, err := readHello(rw)
	if err != nil {
		return "", err
	}
	var ap [proofSize]byte
	if _, err := io.ReadFull(rw, ap[:]); err != nil {
		return "", fmt.Errorf("%w: reading the acceptor's proof: %v", ErrProtocol, err)
	}
	key := deriveKey(cfg.Secret)
	want := proof(key, acceptLbl, dn[:], an, cfg.Self, peer, cfg.Binding)
	if !hmac.Equal(ap[:], want) {
		return "", fmt.Errorf("%w: the store at the other end does not hold this deployment's member secret (check that every host has the same secret file)", ErrRefused)
	}
	if cfg.Allowed != nil && !cfg.Allowed(peer) {
		return "", fmt.Errorf("%w: the store at the other end is %q, not a member this store talks raft with", ErrRefused, peer)
	}
	if _, err := rw.Write(proof(key, dialLabel, an, dn[:], cfg.Self, peer, cfg.Binding)); err != nil {
		return "", fmt.Errorf("memberauth: send proof: %w", err)
	}
	var verdict [1]byte
	if _, err := io.ReadFull(rw, verdict[:]); err != nil || verdict[0] != accepted {
		return "", fmt.Errorf("%w: store %q refused this store's proof (does it hold a different member secret, or not list %q as a member?)", ErrRefused, peer, cfg.Self)
	}
	return peer, nil
}

// Accept runs the accepting side of the handshake on rw and returns the
// dialer's name once it has proved membership. Nothing but the challenge
// is written before the dialer's proof checks out. On any error the caller
// must close the connection.
func Accept(rw io.ReadWriter, cfg Config) (peer string, err error) {
	if err := cfg.check(); err != nil {
		return "", err
	}
	dn, peer, err := readHello(rw)
	if err != nil {
		return "", err
	}
	if cfg.Allowed != nil && !cfg.Allowed(peer) {
		return "", fmt.Errorf("%w: %q is not a member this store talks raft with", ErrRefused, peer)
	}
	var an [nonceSize]byte
	if _, err := rand.Read(an[:]); err != nil {
		return "", err
	}
	key := deriveKey(cfg.Secret)
	msg := appendHello(nil, an[:], cfg.Self)
	msg = append(msg, proof(key, acceptLbl, dn, an[:], peer, cfg.Self, cfg.Binding)...)
	if _, err := rw.Write(msg); err != nil {
		return "", fmt.Errorf("memberauth: send challenge: %w", err)
	}
	var dp [proofSize]byte
	if _, err := io.ReadFull(rw, dp[:]); err != nil {
		return "", fmt.Errorf("%w: reading the dialer's proof: %v", ErrProtocol, err)
	}
	if !hmac.Equal(dp[:], proof(key, dialLabel, an[:], dn, peer, cfg.Self, cfg.Binding)) {
		return "", fmt.Errorf("%w: %q does not hold this deployment's member secret", ErrRefused, peer)
	}
	if _, err := rw.Write([]byte{accepted}); err != nil {
		return "", fmt.Errorf("memberauth: send verdict: %w", err)
	}
	return peer, nil
}

// appendHello appends magic, version, nonce and a length-prefixed name.
func appendHello(b, nonce []byte, name string) []byte {
	b = append(b, magic...)
	b = append(b, version)
	b = append(b, nonce...)
	b = append(b, byte(len(name)))
	return append(b, name...)
}

// readHello reads what appendHello wrote, refusing anything out of bounds
// before allocating for it.
func readHello(r io.Reader) (nonce []byte, name string, err error) {
	var fixed [helloFixed]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if string(fixed[:len(magic)]) != magic {
		return nil, "", fmt.Errorf("%w: the peer sent %q where the handshake starts with %q", ErrProtocol, fixed[:len(magic)], magic)
	}
	if v := fixed[len(magic)]; v != version {
		return nil, "", fmt.Errorf("%w: handshake version %d, this store speaks %d", ErrProtocol, v, version)
	}
	n := int(fixed[helloFixed-1])
	if n == 0 || n > MaxName {
		return nil, "", fmt.Errorf("%w: store name of %d bytes (1..%d)", ErrProtocol, n, MaxName)
	}
	nameBuf := make([]byte, n)
	if _, err := io.ReadFull(r, nameBuf); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	nonce = append([]byte(nil), fixed[len(magic)+1:len(magic)+1+nonceSize]...)
	return nonce, string(nameBuf), nil
}

// deriveKey turns the secret into the key the proofs use, so the secret
// itself never keys anything else.
func deriveKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(keyLabel))
	return m.Sum(nil)
}

// proof is the HMAC of one direction's transcript: its label, the nonce of
// the side being challenged first, then the other, the dialer's and the
// acceptor's names and the channel binding, each length-prefixed.
func proof(key []byte, label string, first, second []byte, dialer, acceptor string, binding []byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte(label), first, second, []byte(dialer), []byte(acceptor), binding} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		m.Write(n[:])
		m.Write(part)
	}
	return m.Sum(nil)
}
