package storegroup

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with one difference from raft's
// own: outgoing connections leave from the store's host address, so that a
// partition between two hosts on one machine can be made by filtering
// source addresses.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	localIP   net.IP
}

func newStreamLayer(bind string, localIP net.IP) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen for raft on %s: %w (is another store using the port?)", bind, err)
	}
	return &streamLayer{Listener: ln, advertise: ln.Addr(), localIP: localIP}, nil
}

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if s.localIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: s.localIP}
	}
	return d.Dial("tcp", string(address))
}

// Addr implements net.Listener with the advertised address.
func (s *streamLayer) Addr() net.Addr { return s.advertise }
