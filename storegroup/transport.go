package storegroup

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// DialFunc opens a connection to address, as (*net.Dialer).DialContext does.
// It is the type of Config.Dial: a test harness passes one to carry a store's
// outgoing connections, so it can refuse and cut links between stores.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// streamLayer is raft's TCP stream layer with one difference from raft's
// own: outgoing connections leave from the store's host address, so that a
// partition between two hosts on one machine can be made by filtering
// source addresses.
//
// With TLS, the raft port accepts only peers presenting a certificate signed
// by the deployment's CA, and dials its peers with its own certificate.
//
// In tests, Config.Dial replaces the TCP dialer (TLS is added on top as
// usual), so a harness can refuse a dial or close a connection it handed
// out: raft then sees a partition. Accepted connections need no hook: each
// is the far end of a dial the harness made, and closing that dial's
// connection closes both.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	localIP   net.IP
	clientTLS *tls.Config
	dial      DialFunc // Config.Dial: nil except in tests
}

func newStreamLayer(bind string, localIP net.IP, sec Security, dial DialFunc) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen for raft on %s: %w (is another store using the port?)", bind, err)
	}
	sl := &streamLayer{Listener: ln, advertise: ln.Addr(), localIP: localIP, clientTLS: sec.ClientTLS, dial: dial}
	if sec.ServerTLS != nil {
		cfg := sec.ServerTLS.Clone()
		if cfg.ClientCAs != nil {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		sl.Listener = tls.NewListener(ln, cfg)
	}
	return sl, nil
}

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.dial != nil {
		return s.dialHooked(string(address), timeout)
	}
	d := &net.Dialer{Timeout: timeout}
	if s.localIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: s.localIP}
	}
	if s.clientTLS == nil {
		return d.Dial("tcp", string(address))
	}
	return tls.DialWithDialer(d, "tcp", string(address), s.tlsFor(string(address)))
}

// dialHooked dials through Config.Dial, then adds TLS as Dial would: the
// hook replaces the TCP dialer only.
func (s *streamLayer) dialHooked(address string, timeout time.Duration) (net.Conn, error) {
	ctx := context.Background()
	if timeout > 0 { // as net.Dialer: no timeout means none
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	nc, err := s.dial(ctx, "tcp", address)
	if err != nil || s.clientTLS == nil {
		return nc, err
	}
	tc := tls.Client(nc, s.tlsFor(address))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// tlsFor returns the client TLS configuration for a peer, its server name
// taken from the address when the configuration names none.
func (s *streamLayer) tlsFor(address string) *tls.Config {
	cfg := s.clientTLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(address); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

// Addr implements net.Listener with the advertised address.
func (s *streamLayer) Addr() net.Addr { return s.advertise }
