package wire

import (
	"context"
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
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to store %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := NewConn(nc, d.MaxFrame)
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = nc.SetDeadline(deadline)
	w, err := ClientHandshake(c, d.Client)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("handshake with store %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, w, nil
}

// ClientHandshake sends Hello and waits for Welcome.
func ClientHandshake(c *Conn, client string) (*Welcome, error) {
	if err := c.Send(&Hello{Version: Version, Client: client}); err != nil {
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
		if m.Code == CodeVersion {
			return nil, fmt.Errorf("%w: %s", ErrVersion, m.Message)
		}
		return nil, m
	default:
		return nil, fmt.Errorf("%w: expected Welcome, got frame type %d", ErrMalformed, m.Type())
	}
}

// ServerHandshake reads Hello and answers Welcome, or an Error for a wrong
// version (and returns ErrVersion).
func ServerHandshake(c *Conn, w Welcome) (*Hello, error) {
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
	w.Version = Version
	return h, c.Send(&w)
}

// IsFatal reports whether a Read error leaves the stream unusable.
func IsFatal(err error) bool {
	return err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType)
}
