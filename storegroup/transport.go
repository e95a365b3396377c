package storegroup

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with one difference from raft's
// own: outgoing connections leave from the store's host address, so that a
// partition between two hosts on one machine can be made by filtering
// source addresses.
//
// With TLS, the raft port accepts only peers presenting a certificate signed
// by the deployment's CA, and dials its peers with its own certificate.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	localIP   net.IP
	clientTLS *tls.Config
}

func newStreamLayer(bind string, localIP net.IP, sec Security) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen for raft on %s: %w (is another store using the port?)", bind, err)
	}
	sl := &streamLayer{Listener: ln, advertise: ln.Addr(), localIP: localIP, clientTLS: sec.ClientTLS}
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
	d := &net.Dialer{Timeout: timeout}
	if s.localIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: s.localIP}
	}
	if s.clientTLS == nil {
		return d.Dial("tcp", string(address))
	}
	cfg := s.clientTLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(string(address)); err == nil {
			cfg.ServerName = host
		}
	}
	return tls.DialWithDialer(d, "tcp", string(address), cfg)
}

// Addr implements net.Listener with the advertised address.
func (s *streamLayer) Addr() net.Addr { return s.advertise }
