package clientserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"umstore/wire"
)

// Limits bounds what clients may hold of a store (the store's
// configuration names it ClientLimits): how many connections, how long a
// connection may stay silent or take over one frame, and how many sources
// and receivers connections may register. A zero field takes
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
	// MaxSourcesPerConn bounds the sources one connection may hold
	// registered (Register or RegisterSource; default 100,000, never more
	// than MaxSources). UM applications run one connection per process
	// with many sources on it, so the default is generous; it bounds what
	// one careless or hostile connection can make the store remember.
	// Registering a source the connection already holds (again, or for
	// another session) does not count again; a publisher's goodbye
	// (KeepAlive Leaving) and closing the connection free its place.
	MaxSourcesPerConn int
	// MaxSources bounds the source registrations all of this store's
	// client connections hold together (default 200,000). What is counted
	// is the client server's live registrations, one per connection and
	// source, freed by the publisher's goodbye or when the connection
	// closes: not the sources the repository records (those stay after
	// their publishers leave, until retention releases them), and not the
	// leader's in-memory sessions (those outlive a closed connection until
	// SourceActivityTimeout). A source registered on two connections (a
	// publisher that reconnected before the store saw its old connection
	// close) counts on each.
	MaxSources int
	// MaxReceiversPerConn bounds, on one connection, the receiver names
	// registered (RegisterReceiver: a name counts once whatever its
	// session; the receiver's goodbye, ConsumedAs Leaving, frees it) and,
	// separately, the subscriptions running (default 10,000 each). A
	// receiver name is held by the leader for its whole store, not by the
	// connection; counting it on the connection that registered it is what
	// bounds one client.
	MaxReceiversPerConn int
	// MaxReceivers bounds the receiver names all of this store's client
	// connections hold registered together (default 100,000;
	// MaxReceiversPerConn is never more). As for MaxSources, what is
	// counted is the client server's live registrations, one per
	// connection and name, freed by the receiver's goodbye (ConsumedAs
	// Leaving) or when the connection closes: many connections, each
	// within its own limit, cannot together make the leader hold an
	// unbounded number of receiver names.
	MaxReceivers int
	// MaxSessions bounds the sources the leader holds for publisher
	// sessions (default 400,000). Unlike MaxSources it counts what
	// outlives a connection: a source registered stays held for its
	// session until the publisher's goodbye, or until it is expired after
	// SourceActivityTimeout of silence. Without it, a client that keeps
	// closing and reopening connections, each within its own limits, makes
	// the leader hold (and the log record) sources without bound. A source
	// the leader holds already (again, or taken over by a new session)
	// does not count again. The default is twice MaxSources: every live
	// registration, and as many left by closed connections.
	MaxSessions int
	// MaxSeqJump bounds the gap one Publish may open: how many sequence
	// numbers it may skip past the highest this store knows any group holds
	// for its source (default 1,048,576; seqjump.go). A publisher skips
	// numbers only when it restarts without hearing from every group (at
	// most its state file's reservation, 4,096 in the Go SDK), so the
	// default is far beyond what one explains, and far below what it would
	// take to use up a source: no client can publish at the last sequence
	// number of a source that holds 5.
	MaxSeqJump uint64
}

// Defaults of Limits that do not depend on the process.
const (
	defaultMaxConnsPerAddr = 1024
	defaultIdleTimeout     = 60 * time.Second
	defaultFrameTimeout    = 30 * time.Second
	// One UM process per connection with many sources; twice that on a
	// store; a receiver process subscribes to far fewer.
	defaultMaxSourcesPerConn   = 100_000
	defaultMaxSources          = 200_000
	defaultMaxReceiversPerConn = 10_000
	defaultMaxReceivers        = 100_000
	defaultMaxSessions         = 400_000
	defaultMaxSeqJump          = 1 << 20
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

		MaxSourcesPerConn:   defaultMaxSourcesPerConn,
		MaxSources:          defaultMaxSources,
		MaxReceiversPerConn: defaultMaxReceiversPerConn,
		MaxReceivers:        defaultMaxReceivers,
		MaxSessions:         defaultMaxSessions,
		MaxSeqJump:          defaultMaxSeqJump,
	}
}

// Validate reports a negative limit, naming it.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name     string
		negative bool
	}{
		{"MaxConns", l.MaxConns < 0},
		{"MaxConnsPerAddr", l.MaxConnsPerAddr < 0},
		{"IdleTimeout", l.IdleTimeout < 0},
		{"FrameTimeout", l.FrameTimeout < 0},
		{"MaxSourcesPerConn", l.MaxSourcesPerConn < 0},
		{"MaxSources", l.MaxSources < 0},
		{"MaxReceiversPerConn", l.MaxReceiversPerConn < 0},
		{"MaxReceivers", l.MaxReceivers < 0},
		{"MaxSessions", l.MaxSessions < 0},
	} {
		if f.negative {
			return fmt.Errorf("client limit %s must not be negative (0 takes the default)", f.name)
		}
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
	if l.MaxSources == 0 {
		l.MaxSources = d.MaxSources
	}
	if l.MaxSourcesPerConn == 0 {
		l.MaxSourcesPerConn = d.MaxSourcesPerConn
	}
	l.MaxSourcesPerConn = min(l.MaxSourcesPerConn, l.MaxSources)
	if l.MaxReceivers == 0 {
		l.MaxReceivers = d.MaxReceivers
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = d.MaxSessions
	}
	if l.MaxReceiversPerConn == 0 {
		l.MaxReceiversPerConn = d.MaxReceiversPerConn
	}
	l.MaxReceiversPerConn = min(l.MaxReceiversPerConn, l.MaxReceivers)
	if l.MaxSeqJump == 0 {
		l.MaxSeqJump = d.MaxSeqJump
	}
	return l
}

// budget counts against a bound: the client connections of the process
// (processConnBudget), the source registrations of a store (MaxSources),
// its receiver names (MaxReceivers).
type budget struct {
	max int
	n   atomic.Int64
}

// take counts one more, or reports that the bound is reached.
func (b *budget) take() bool {
	if b.n.Add(1) > int64(b.max) {
		b.n.Add(-1)
		return false
	}
	return true
}

// give gives back n taken.
func (b *budget) give(n int) { b.n.Add(-int64(n)) }

// processConnBudget is the process's budget of client connections:
// RLIMIT_NOFILE (which the Go runtime raises to the hard limit at start)
// less a reserve of a quarter, at least 256.
var processConnBudget = sync.OnceValue(func() *budget {
	n := 4096 // if the limit cannot be read
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil {
		n = int(min(rl.Cur, 1<<24))
	}
	return &budget{max: max(n-max(256, n/4), 64)}
})

// connCounter counts one store's client connections, in total and per
// remote address, against its Limits and the process's budget.
type connCounter struct {
	limits Limits
	budget *budget

	mu      sync.Mutex
	total   int
	perAddr map[string]int
}

func newConnCounter(l Limits, budget *budget) *connCounter {
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
	cc.budget.give(1)
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

// overLimit counts and logs (at most once per interval) a registration or
// subscription refused over a limit, and returns its refusal. It is
// answered CodeUnavailable, as connections over a limit are: this
// connection, or this store, cannot take more now; the message names the
// limit and what to do.
func (cs *Server) overLimit(reqID uint64, reason int, msg string) *wire.Error {
	cs.Metrics.refused(reason)
	if dropped, ok := cs.limitLog.Allow(time.Now()); ok {
		cs.Log.Warn("refusing a client registration over a limit", "reason", RefusedReasonNames[reason], "message", msg,
			"refused_since_last_warning", dropped)
	}
	return &wire.Error{ReqID: reqID, Code: wire.CodeUnavailable, Message: msg}
}

func (cs *Server) connSourcesMessage() string {
	return fmt.Sprintf("this connection already holds %d sources (limit MaxSourcesPerConn of store %s's client limits, umstored --max-sources-per-conn): close sources you no longer use (KeepAlive Leaving) or open another connection",
		cs.Limits.MaxSourcesPerConn, cs.Name)
}

func (cs *Server) storeSourcesMessage() string {
	return fmt.Sprintf("store %s already holds %d source registrations from its clients (limit MaxSources of its client limits, umstored --max-sources): close sources you no longer use (KeepAlive Leaving, or close their connections), retry later, or raise the limit",
		cs.Name, cs.Limits.MaxSources)
}

func (cs *Server) connReceiversMessage() string {
	return fmt.Sprintf("this connection already holds %d receiver names (limit MaxReceiversPerConn of store %s's client limits, umstored --max-receivers-per-conn): close receivers you no longer use (ConsumedAs Leaving) or open another connection",
		cs.Limits.MaxReceiversPerConn, cs.Name)
}

func (cs *Server) storeReceiversMessage() string {
	return fmt.Sprintf("store %s already holds %d receiver names registered by its clients (limit MaxReceivers of its client limits, umstored --max-receivers): close receivers you no longer use (ConsumedAs Leaving, or close their connections), retry later, or raise the limit",
		cs.Name, cs.Limits.MaxReceivers)
}

func (cs *Server) connSubscriptionsMessage() string {
	return fmt.Sprintf("this connection already runs %d subscriptions (limit MaxReceiversPerConn of store %s's client limits, umstored --max-receivers-per-conn): subscribe on another connection, or close connections whose subscriptions you no longer need",
		cs.Limits.MaxReceiversPerConn, cs.Name)
}
