package raftport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Bounds on connections to the raft port that have not proved membership
// yet. A group's members open a handful of connections each; these leave
// them room while a stranger's flood of silent connections is refused at
// once instead of piling up until the handshake deadline.
const (
	maxPendingHandshakes    = 64 // per store's raft port
	maxPendingPerRemoteHost = 16 // per remote IP address
)

// streamLayer is raft's TCP stream layer with two differences from raft's
// own.
//
// Every connection proves membership before raft sees it (auth.go):
// with a member secret, both ends run internal/memberauth's handshake,
// bound to the TLS session when there is one; with TLS, the peer's
// certificate must be valid for the address of another member's host, and
// the connection must come from that address. The acceptor runs these
// handshakes in goroutines of its own, under Config.HandshakeTimeout and in
// bounded number, and Accept hands raft only the connections that passed.
// A refused peer is closed, counted and logged (at most one line per
// remote address every refusalLogEvery).
//
// Outgoing connections leave from the store's host address, so that a
// partition between two hosts on one machine can be made by filtering
// source addresses.
//
// An accepted connection on which nothing arrives for Config.IdleTimeout is
// closed; the dialing side replaces a pooled connection that has been
// quiet for half of that before writing on it (dialedConn, auth_conn.go), so raft's pool
// never hands out a connection the other end has dropped.
//
// In tests, Config.Dial replaces the TCP dialer (TLS and the member
// handshake are added on top as usual), so a harness can refuse a dial or
// close a connection it handed out: raft then sees a partition. Accepted
// connections need no hook: each is the far end of a dial the harness
// made, and closing that dial's connection closes both.
type streamLayer struct {
	ln        net.Listener // plain TCP: TLS is added per connection
	advertise net.Addr
	localIP   net.IP
	serverTLS *tls.Config // nil: plain TCP
	clientTLS *tls.Config
	dial      DialFunc // Config.Dial: nil except in tests
	auth      memberCheck
	log       *slog.Logger
	refusals  *refusalLog

	handshakeTimeout time.Duration
	idleTimeout      time.Duration

	ready chan net.Conn     // connections that proved membership, for Accept
	done  chan struct{}     // closed by Close
	wg    sync.WaitGroup    // the accept loop and the handshakes in progress
	mu    sync.Mutex        // guards the fields below
	open  map[net.Conn]bool // connections still in their handshake
	perIP map[string]int    // of those, per remote IP
	once  sync.Once
}

// streamOptions is what newStreamLayer needs of the port's configuration.
type streamOptions struct {
	bind      string
	localIP   net.IP
	serverTLS *tls.Config // nil: plain TCP
	clientTLS *tls.Config
	dial      DialFunc
	auth      memberCheck
	log       *slog.Logger
	refused   func(Refusal) // counts a refusal
	// handshakeTimeout and idleTimeout: Config.HandshakeTimeout and
	// IdleTimeout.
	handshakeTimeout, idleTimeout time.Duration
}

func newStreamLayer(o streamOptions) (*streamLayer, error) {
	ln, err := net.Listen("tcp", o.bind)
	if err != nil {
		return nil, fmt.Errorf("listen for raft on %s: %w (is another store using the port?)", o.bind, err)
	}
	sl := &streamLayer{
		ln:               ln,
		advertise:        ln.Addr(),
		localIP:          o.localIP,
		clientTLS:        o.clientTLS,
		dial:             o.dial,
		auth:             o.auth,
		log:              o.log,
		refusals:         newRefusalLog(o.log, o.refused),
		handshakeTimeout: o.handshakeTimeout,
		idleTimeout:      o.idleTimeout,
		ready:            make(chan net.Conn),
		done:             make(chan struct{}),
		open:             map[net.Conn]bool{},
		perIP:            map[string]int{},
	}
	if o.serverTLS != nil {
		cfg := o.serverTLS.Clone()
		if cfg.ClientCAs != nil {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		sl.serverTLS = cfg
	}
	sl.wg.Add(1)
	go sl.acceptLoop()
	return sl, nil
}

// acceptLoop accepts TCP connections and starts a handshake for each, so
// that a slow or silent peer never holds up raft's own accept loop.
func (s *streamLayer) acceptLoop() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little, as
			// net/http does, rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("raft port: accepting a connection failed; retrying", "err", err, "retry_in", delay)
			select {
			case <-s.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !s.admit(c) {
			// Counted before the peer sees the close, so that whoever
			// watches the refusals sees this one once the peer does.
			s.refusals.refuse(c.RemoteAddr(), refusedBusy, errTooManyHandshakes)
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.handshake(c)
	}
}

var errTooManyHandshakes = fmt.Errorf("too many connections to the raft port are still proving membership (at most %d, %d per remote address)", maxPendingHandshakes, maxPendingPerRemoteHost)

// admit records c as in its handshake, unless the bounds are reached.
func (s *streamLayer) admit(c net.Conn) bool {
	ip := RemoteIP(c.RemoteAddr())
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) >= maxPendingHandshakes || s.perIP[ip] >= maxPendingPerRemoteHost {
		return false
	}
	s.open[c] = true
	s.perIP[ip]++
	return true
}

// release forgets c as in its handshake.
func (s *streamLayer) release(c net.Conn) {
	ip := RemoteIP(c.RemoteAddr())
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, c)
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
}

// handshake authenticates one accepted connection under the handshake
// deadline and hands it to Accept, or refuses it.
func (s *streamLayer) handshake(raw net.Conn) {
	defer s.wg.Done()
	deadline := time.Now().Add(s.handshakeTimeout)
	_ = raw.SetDeadline(deadline)
	conn, why, err := s.auth.accept(raw, s.serverTLS, deadline)
	s.release(raw)
	if err != nil {
		raw.Close()
		select {
		case <-s.done: // closed under our feet: not the peer's doing
		default:
			s.refusals.refuse(raw.RemoteAddr(), why, err)
		}
		return
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return
	}
	select {
	case s.ready <- &idleConn{Conn: conn, idle: s.idleTimeout, log: s.log}:
	case <-s.done:
		conn.Close()
	}
}

// Accept implements net.Listener: the next connection that proved
// membership.
func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.ready:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener. It also cuts the handshakes in progress
// and waits for their goroutines.
func (s *streamLayer) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.mu.Lock()
		for c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return err
}

// Addr implements net.Listener with the advertised address.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial implements raft.StreamLayer: a connection to the member at address
// that has proved membership, replaced transparently when raft writes on
// it after it has been quiet for half the acceptor's idle timeout.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	addr := string(address)
	c, err := s.dialMember(addr, timeout)
	if err != nil {
		return nil, err
	}
	return newDialedConn(c, s.idleTimeout/2, func() (net.Conn, error) { return s.dialMember(addr, timeout) }), nil
}

// dialMember opens a connection to address (through Config.Dial in
// tests), adds TLS if configured, and runs the member handshake.
func (s *streamLayer) dialMember(address string, timeout time.Duration) (net.Conn, error) {
	ctx := context.Background()
	if timeout > 0 { // as net.Dialer: no timeout means none
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var nc net.Conn
	var err error
	if s.dial != nil {
		nc, err = s.dial(ctx, "tcp", address)
	} else {
		d := &net.Dialer{}
		if s.localIP != nil {
			d.LocalAddr = &net.TCPAddr{IP: s.localIP}
		}
		nc, err = d.DialContext(ctx, "tcp", address)
	}
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(s.handshakeTimeout))
	conn, err := s.auth.dial(nc, s.tlsFor(address), address)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// tlsFor returns the client TLS configuration for a peer (nil without
// TLS), its server name taken from the address when the configuration
// names none.
func (s *streamLayer) tlsFor(address string) *tls.Config {
	if s.clientTLS == nil {
		return nil
	}
	cfg := s.clientTLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(address); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

// RemoteIP is the IP address of addr as a string ("" if it has none).
func RemoteIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}
