package wire

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// Dialer opens handshaken client connections to stores.
type Dialer struct {
	// Client names the connecting program in the store's logs.
	Client string
	// LocalIP, if set, is the address outgoing connections leave from, so a
	// host's traffic carries that host's address (partition tests filter on it).
	LocalIP net.IP
	// Timeout bounds connecting plus the handshake; 0 means 5s.
	Timeout time.Duration
	// MaxFrame bounds incoming frames; 0 means DefaultMaxFrame.
	MaxFrame int
	// TLS, if set, wraps every connection in TLS with this configuration
	// (its ServerName is filled in from the address when empty).
	TLS *tls.Config
	// Token is presented in Hello when the deployment requires one.
	Token string
	// DialContext, if set, opens the TCP connection instead of a
	// net.Dialer (LocalIP is then ignored). Tests use it to cut links
	// between stores; nil in production.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Dial connects to a store's client address and completes the handshake.
func (d *Dialer) Dial(ctx context.Context, addr string) (*Conn, *Welcome, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	nd := net.Dialer{Timeout: timeout}
	if d.LocalIP != nil {
		nd.LocalAddr = &net.TCPAddr{IP: d.LocalIP}
	}
	var nc net.Conn
	var err error
	if d.DialContext != nil {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		nc, err = d.DialContext(dctx, "tcp", addr)
		cancel()
	} else {
		nc, err = nd.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to store %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = nc.SetDeadline(deadline)
	if d.TLS != nil {
		cfg := d.TLS.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("TLS handshake with store %s: %w (check the CA and certificates named in the deployment's security section)", addr, tlsRefusal(err))
		}
		nc = tc
	}
	c := NewConn(nc, d.MaxFrame)
	w, err := ClientHandshake(c, d.Client, d.Token)
	if err != nil {
		nc.Close()
		if d.TLS != nil {
			// Under TLS 1.3 the store checks the client's certificate after
			// the client's handshake ends: its refusal is the first read.
			if r := tlsRefusal(err); r != err {
				return nil, nil, fmt.Errorf("handshake with store %s: %w (give the client a certificate the stores' CA signed: the deployment's security section, or --tls-cert and --tls-key)", addr, r)
			}
		}
		return nil, nil, fmt.Errorf("handshake with store %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, w, nil
}

// ClientHandshake sends Hello and waits for Welcome.
func ClientHandshake(c *Conn, client, token string) (*Welcome, error) {
	if err := c.Send(&Hello{Version: Version, Client: client, Token: token}); err != nil {
		return nil, err
	}
	m, err := c.Read()
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *Welcome:
		if m.Version != Version {
			return nil, fmt.Errorf("%w: store answered version %d, we speak %d", ErrVersion, m.Version, Version)
		}
		return m, nil
	case *Error:
		switch m.Code {
		case CodeVersion:
			return nil, fmt.Errorf("%w: %s", ErrVersion, m.Message)
		case CodeAuth:
			return nil, fmt.Errorf("%w: %s", ErrUnauthorized, m.Message)
		}
		return nil, m
	default:
		return nil, fmt.Errorf("%w: expected Welcome, got frame type %d", ErrMalformed, m.Type())
	}
}

// ServerHandshake reads Hello and answers Welcome, or an Error for a wrong
// version (returning ErrVersion) or, when token is not empty, a token that
// does not match (returning ErrUnauthorized).
func ServerHandshake(c *Conn, w Welcome, token string) (*Hello, error) {
	return ServerHandshakeWith(c, w, func(h *Hello) string {
		if token != "" && subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1 {
			return "this deployment requires a token: give the client the deployment's token file"
		}
		return ""
	})
}

// ServerHandshakeWith is ServerHandshake with the client's admission
// decided by admit, called once the Hello is read (over TLS, once the
// handshake is done): it returns "" to admit the client, or the refusal
// to send it (CodeAuth; the handshake then returns ErrUnauthorized).
func ServerHandshakeWith(c *Conn, w Welcome, admit func(h *Hello) (refusal string)) (*Hello, error) {
	m, err := c.Read()
	if err != nil {
		return nil, err
	}
	h, ok := m.(*Hello)
	if !ok {
		_ = c.Send(&Error{Code: CodeBadRequest, Message: "the first frame must be Hello"})
		return nil, fmt.Errorf("%w: first frame is type %d, not Hello", ErrMalformed, m.Type())
	}
	if h.Version != Version {
		_ = c.Send(&Error{Code: CodeVersion, Message: fmt.Sprintf("this store speaks protocol version %d, not %d", Version, h.Version)})
		return h, fmt.Errorf("%w: client %q speaks %d", ErrVersion, h.Client, h.Version)
	}
	if refusal := admit(h); refusal != "" {
		_ = c.Send(&Error{Code: CodeAuth, Message: refusal})
		return h, fmt.Errorf("%w: client %q: %s", ErrUnauthorized, h.Client, refusal)
	}
	w.Version = Version
	return h, c.Send(&w)
}

// tlsRefusal marks err with ErrTLSRefused when it is a certificate's
// refusal: this side did not trust the store's, or the store sent a TLS
// alert (it refused this side's certificate, or its lack of one).
func tlsRefusal(err error) error {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var op *net.OpError
	if errors.As(err, &verify) || errors.As(err, &unknown) || (errors.As(err, &op) && op.Op == "remote error") {
		return fmt.Errorf("%w: %w", ErrTLSRefused, err)
	}
	return err
}

// IsFatal reports whether a Read error leaves the stream unusable.
func IsFatal(err error) bool {
	return err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType)
}
