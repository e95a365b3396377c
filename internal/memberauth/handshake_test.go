package memberauth

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	secretA = bytes.Repeat([]byte{0x11}, 32)
	secretB = bytes.Repeat([]byte{0x22}, 32)
)

// run performs a handshake over an in-memory connection.
func run(t *testing.T, dial, accept Config) (dialPeer, acceptPeer string, dialErr, acceptErr error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	deadline := time.Now().Add(5 * time.Second)
	_ = a.SetDeadline(deadline)
	_ = b.SetDeadline(deadline)
	done := make(chan struct{})
	go func() {
		defer close(done)
		acceptPeer, acceptErr = Accept(b, accept)
		if acceptErr != nil {
			b.Close()
		}
	}()
	dialPeer, dialErr = Dial(a, dial)
	if dialErr != nil {
		a.Close()
	}
	<-done
	return
}

func TestHandshake(t *testing.T) {
	members := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, m := range names {
				if m == n {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		name           string
		dial, accept   Config
		wantDialErr    error
		wantAcceptErr  error
		wantAcceptPeer string
	}{
		{
			name:           "same secret, allowed names",
			dial:           Config{Secret: secretA, Self: "G1S1", Allowed: members("G1S2")},
			accept:         Config{Secret: secretA, Self: "G1S2", Allowed: members("G1S1", "G1S3")},
			wantAcceptPeer: "G1S1",
		},
		{
			name:          "different secrets: each side refuses",
			dial:          Config{Secret: secretB, Self: "G1S1"},
			accept:        Config{Secret: secretA, Self: "G1S2"},
			wantDialErr:   ErrRefused,
			wantAcceptErr: ErrProtocol, // the dialer hangs up before sending a proof
		},
		{
			name:          "a name the acceptor does not talk raft with",
			dial:          Config{Secret: secretA, Self: "G2S1"},
			accept:        Config{Secret: secretA, Self: "G1S2", Allowed: members("G1S1", "G1S3")},
			wantDialErr:   ErrProtocol,
			wantAcceptErr: ErrRefused,
		},
		{
			name:          "the dialer does not talk raft with the acceptor",
			dial:          Config{Secret: secretA, Self: "G1S1", Allowed: members("G1S3")},
			accept:        Config{Secret: secretA, Self: "G1S2"},
			wantDialErr:   ErrRefused,
			wantAcceptErr: ErrProtocol,
		},
		{
			name:          "channel bindings differ (a relayed handshake)",
			dial:          Config{Secret: secretA, Self: "G1S1", Binding: []byte("session one")},
			accept:        Config{Secret: secretA, Self: "G1S2", Binding: []byte("session two")},
			wantDialErr:   ErrRefused,
			wantAcceptErr: ErrProtocol,
		},
		{
			name:          "a short secret is a configuration error",
			dial:          Config{Secret: []byte("short"), Self: "G1S1"},
			accept:        Config{Secret: secretA, Self: "G1S2"},
			wantDialErr:   ErrConfig,
			wantAcceptErr: ErrProtocol,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dp, ap, derr, aerr := run(t, tc.dial, tc.accept)
			if !errors.Is(derr, tc.wantDialErr) && !(tc.wantDialErr == nil && derr == nil) {
				t.Errorf("dialer: err %v, want %v", derr, tc.wantDialErr)
			}
			if !errors.Is(aerr, tc.wantAcceptErr) && !(tc.wantAcceptErr == nil && aerr == nil) {
				t.Errorf("acceptor: err %v, want %v", aerr, tc.wantAcceptErr)
			}
			if tc.wantAcceptErr == nil && ap != tc.wantAcceptPeer {
				t.Errorf("acceptor saw peer %q, want %q", ap, tc.wantAcceptPeer)
			}
			if tc.wantDialErr == nil && dp != tc.accept.Self {
				t.Errorf("dialer saw peer %q, want %q", dp, tc.accept.Self)
			}
		})
	}
}

// recorder is one end of a connection that keeps what the other end sent.
type recorder struct {
	io.ReadWriter
	read bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.ReadWriter.Read(p)
	r.read.Write(p[:n])
	return n, err
}

// A dialer's bytes recorded from one good handshake do not pass a second
// time: the acceptor's nonce is fresh.
func TestRecordedHandshakeIsRefused(t *testing.T) {
	a, b := net.Pipe()
	rec := &recorder{ReadWriter: b}
	errc := make(chan error, 1)
	go func() { _, err := Accept(rec, Config{Secret: secretA, Self: "G1S2"}); errc <- err }()
	if _, err := Dial(a, Config{Secret: secretA, Self: "G1S1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()

	replay := bytes.NewReader(rec.read.Bytes())
	_, err := Accept(struct {
		io.Reader
		io.Writer
	}{replay, io.Discard}, Config{Secret: secretA, Self: "G1S2"})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("replayed dialer bytes: err %v, want ErrRefused", err)
	}
}

// The acceptor's proof, sent back as the dialer's, is refused: the two
// directions have different labels.
func TestReflectedProofIsRefused(t *testing.T) {
	cfg := Config{Secret: secretA, Self: "G1S2"}
	a, b := net.Pipe()
	defer a.Close()
	errc := make(chan error, 1)
	go func() { _, err := Accept(b, cfg); errc <- err; b.Close() }()
	// A stranger's hello with a nonce of its choosing, then the
	// acceptor's own proof echoed back.
	nonce := bytes.Repeat([]byte{7}, nonceSize)
	if _, err := a.Write(appendHello(nil, nonce, "G1S1")); err != nil {
		t.Fatal(err)
	}
	_, _, err := readHello(a)
	if err != nil {
		t.Fatal(err)
	}
	var p [proofSize]byte
	if _, err := io.ReadFull(a, p[:]); err != nil {
		t.Fatal(err)
	}
	go a.Write(p[:])
	if err := <-errc; !errors.Is(err, ErrRefused) {
		t.Fatalf("reflected proof: err %v, want ErrRefused", err)
	}
}

func TestMalformedHellos(t *testing.T) {
	good := appendHello(nil, bytes.Repeat([]byte{1}, nonceSize), "G1S1")
	cases := map[string][]byte{
		"raft's own first byte": {0x00, 0x01, 0x02},
		"wrong magic":           append([]byte("HTTP"), good[4:]...),
		"another version":       append(append([]byte(magic), 9), good[5:]...),
		"empty name":            append(append([]byte{}, good[:helloFixed-1]...), 0),
		"name too long":         append(append([]byte{}, good[:helloFixed-1]...), 200),
		"cut in the name":       good[:len(good)-2],
		"nothing":               nil,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Accept(struct {
				io.Reader
				io.Writer
			}{bytes.NewReader(in), io.Discard}, Config{Secret: secretA, Self: "G1S2"})
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("err %v, want ErrProtocol", err)
			}
		})
	}
}

func TestLoadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", string(NewSecret()))
	s, err := LoadSecret(good)
	if err != nil || len(s) != SecretBytes {
		t.Fatalf("LoadSecret(new secret) = %d bytes, %v", len(s), err)
	}
	for name, content := range map[string]string{
		"empty":   "",
		"short":   "abcd\n",
		"not hex": strings.Repeat("zz", 32),
		"huge":    strings.Repeat("a", maxSecretFile+10),
	} {
		p := write(name, content)
		if _, err := LoadSecret(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %v, want an error naming %s", name, err, p)
		}
	}
	if _, err := LoadSecret(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing secret file loaded")
	}
}
