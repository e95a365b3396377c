package clientserver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"umstore/wire"
)

// Limits bounds what clients may hold of a store (the store's
// configuration names it ClientLimits): how many connections, and how long
// a connection may stay silent or take over one frame. A zero field takes
// its default (DefaultLimits); storegroup's DESIGN.md says how the defaults
// were chosen.
//
// Beyond these, every store of a process shares one budget of client
// connections: the process's file-descriptor limit (RLIMIT_NOFILE) less a
// reserve of a quarter of it (at least 256) for raft, the data files and
// the admin server. Whatever the limits and however many stores a host
// runs, clients cannot take the descriptors the stores need to work.
type Limits struct {
	// MaxConns bounds this store's open client connections. The default is
	// a quarter of the process's budget (3,750 under a limit of 20,000), so
	// a flood on one store leaves room for the clients of the others.
	MaxConns int
	// MaxConnsPerAddr bounds the connections to this store from one remote
	// IP address (default 1024, never more than MaxConns), so one client
	// host cannot take all of a store's connections.
	MaxConnsPerAddr int
	// IdleTimeout closes a connection that sends nothing for this long
	// after its Hello (default 60s). It is never shorter than twice the
	// store's SourceActivityTimeout, so a publisher that keeps its source
	// alive keeps its connection too (publishers send a KeepAlive every 3s
	// when idle). A connection holding a subscription is exempt while the
	// subscription runs: the store pushes to it, the receiver need not say
	// anything. Clients that pool connections (internal/groupclient)
	// reconnect when they find one closed.
	IdleTimeout time.Duration
	// FrameTimeout bounds how long one frame may take to arrive once its
	// first byte has (default 30s: a frame of the largest size at about
	// 4.5 Mbit/s). A client that trickles a frame is cut, subscriptions
	// included.
	FrameTimeout time.Duration
}

// Defaults of Limits that do not depend on the process.
const (
	defaultMaxConnsPerAddr = 1024
	defaultIdleTimeout     = 60 * time.Second
	defaultFrameTimeout    = 30 * time.Second
)

// DefaultLimits returns the default limits for this process (see
// Limits).
func DefaultLimits() Limits {
	perStore := max(processConnBudget().max/4, 1)
	return Limits{
		MaxConns:        perStore,
		MaxConnsPerAddr: min(defaultMaxConnsPerAddr, perStore),
		IdleTimeout:     defaultIdleTimeout,
		FrameTimeout:    defaultFrameTimeout,
	}
}

// Validate reports a negative limit.
func (l Limits) Validate() error {
	if l.MaxConns < 0 || l.MaxConnsPerAddr < 0 || l.IdleTimeout < 0 || l.FrameTimeout < 0 {
		return errors.New("client limits must not be negative (0 takes the default)")
	}
	return nil
}

// withDefaults fills in zero fields and applies the rules between fields.
func (l Limits) withDefaults(activityTimeout time.Duration) Limits {
	d := DefaultLimits()
	if l.MaxConns == 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerAddr == 0 {
		l.MaxConnsPerAddr = defaultMaxConnsPerAddr
	}
	l.MaxConnsPerAddr = min(l.MaxConnsPerAddr, l.MaxConns)
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	l.IdleTimeout = max(l.IdleTimeout, 2*activityTimeout)
	if l.FrameTimeout == 0 {
		l.FrameTimeout = d.FrameTimeout
	}
	return l
}

// connBudget counts client connections against a bound shared by every
// store of the process.
type connBudget struct {
	max int
	n   atomic.Int64
}

func (b *connBudget) take() bool {
	if b.n.Add(1) > int64(b.max) {
		b.n.Add(-1)
		return false
	}
	return true
}

func (b *connBudget) give() { b.n.Add(-1) }

// processConnBudget is the process's budget of client connections:
// RLIMIT_NOFILE (which the Go runtime raises to the hard limit at start)
// less a reserve of a quarter, at least 256.
var processConnBudget = sync.OnceValue(func() *connBudget {
	n := 4096 // if the limit cannot be read
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil {
		n = int(min(rl.Cur, 1<<24))
	}
	return &connBudget{max: max(n-max(256, n/4), 64)}
})

// connCounter counts one store's client connections, in total and per
// remote address, against its Limits and the process's budget.
type connCounter struct {
	limits Limits
	budget *connBudget

	mu      sync.Mutex
	total   int
	perAddr map[string]int
}

func newConnCounter(l Limits, budget *connBudget) *connCounter {
	return &connCounter{limits: l, budget: budget, perAddr: map[string]int{}}
}

// admit counts a new connection from remote, or refuses it (ok false) with
// the limit it would exceed. An admitted connection is given back with
// release(key).
func (cc *connCounter) admit(remote net.Addr) (key string, reason int, ok bool) {
	key = addrKey(remote)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch {
	case cc.total >= cc.limits.MaxConns:
		return key, connRefusedStoreLimit, false
	case cc.perAddr[key] >= cc.limits.MaxConnsPerAddr:
		return key, connRefusedAddrLimit, false
	case !cc.budget.take():
		return key, connRefusedProcessLimit, false
	}
	cc.total++
	cc.perAddr[key]++
	return key, 0, true
}

func (cc *connCounter) release(key string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.total--
	if cc.perAddr[key]--; cc.perAddr[key] <= 0 {
		delete(cc.perAddr, key)
	}
	cc.budget.give()
}

// addrKey is the remote IP address connections are counted under.
func addrKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap().String()
	}
	return a.String()
}

// refusalMessage tells a refused client which limit it met and what to do.
func (cs *Server) refusalMessage(reason int, key string) string {
	switch reason {
	case connRefusedStoreLimit:
		return fmt.Sprintf("store %s has %d client connections, its limit: retry later, or raise ClientLimits.MaxConns", cs.Name, cs.Limits.MaxConns)
	case connRefusedAddrLimit:
		return fmt.Sprintf("store %s has %d connections from %s, the limit per address: close connections you do not use, or raise ClientLimits.MaxConnsPerAddr", cs.Name, cs.Limits.MaxConnsPerAddr, key)
	default:
		return fmt.Sprintf("the process of store %s has reached its budget of client connections (from its file-descriptor limit): retry later, or raise the limit (ulimit -n)", cs.Name)
	}
}

// politeRefusals bounds the refused connections, across the process, that
// are told why before they are closed; past it they are closed at once.
var politeRefusals = make(chan struct{}, 32)

// refuse closes a connection over a limit at once, counts it and logs it
// (at most once per interval). A plain-TCP connection is first sent an
// Error frame saying which limit, when that is cheap: while few refusals
// are under way, and never over TLS (that would take a handshake).
func (cs *Server) refuse(nc net.Conn, reason int, key string) {
	cs.Metrics.RefusedConns[reason].Add(1)
	if dropped, ok := cs.refusalLog.Allow(time.Now()); ok {
		cs.Log.Warn("refusing client connections over a limit", "reason", ConnRefusedNames[reason],
			"remote", nc.RemoteAddr(), "refused_since_last_warning", dropped, "max_conns", cs.Limits.MaxConns,
			"max_conns_per_addr", cs.Limits.MaxConnsPerAddr)
	}
	if _, isTLS := nc.(*tls.Conn); isTLS {
		nc.Close()
		return
	}
	select {
	case politeRefusals <- struct{}{}:
	default:
		nc.Close()
		return
	}
	msg := &wire.Error{Code: wire.CodeUnavailable, Message: cs.refusalMessage(reason, key)}
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		<-politeRefusals
		nc.Close()
		return
	}
	cs.wg.Add(1)
	cs.mu.Unlock()
	go func() {
		defer cs.wg.Done()
		defer func() { <-politeRefusals }()
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(time.Second))
		if err := wire.NewConn(nc, 0).Send(msg); err != nil {
			return
		}
		// Closing with the client's Hello unread would reset the
		// connection and could discard the Error: half-close, and read
		// until the client closes or the deadline.
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		var buf [512]byte
		for {
			if _, err := nc.Read(buf[:]); err != nil {
				return
			}
		}
	}()
}
