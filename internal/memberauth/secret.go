package memberauth

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"umstore/internal/securefile"
)

// SecretBytes is the size of a secret NewSecret creates: 256 bits.
const SecretBytes = 32

// maxSecretFile bounds what LoadSecret reads: a secret file is one line.
const maxSecretFile = 4096

// NewSecret returns a fresh random member secret, hex-encoded with a
// trailing newline, as a secret file holds it.
func NewSecret() []byte {
	b := make([]byte, SecretBytes)
	_, _ = rand.Read(b) // crypto/rand never fails (it panics instead)
	return []byte(hex.EncodeToString(b) + "\n")
}

// LoadSecret reads a member secret file: one line of hex, at least
// MinSecret bytes once decoded. It refuses, naming the file, an empty,
// oversized or non-hex file, so a typo never runs a deployment with a weak
// or empty secret.
func LoadSecret(path string) ([]byte, error) {
	b, err := securefile.Read(path, "the member secret file", maxSecretFile)
	if err != nil {
		return nil, fmt.Errorf("%w (it should hold one line of hex; umstored plan writes one)", err)
	}
	text := strings.TrimSpace(string(b))
	secret, err := hex.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("member secret file %s is not one line of hex: %w", path, err)
	}
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("member secret file %s holds %d bytes; at least %d are needed (umstored plan writes %d)", path, len(secret), MinSecret, SecretBytes)
	}
	return secret, nil
}
