package clientserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"umstore/internal/logevery"
	"umstore/repository"
)

// Limits on client requests.
const (
	maxSourceName     = repository.MaxSourceNameLen
	defaultFetchCount = 1000
	maxFetchCount     = 10000
	defaultFetchBytes = 1 << 20
	handshakeTimeout  = 10 * time.Second
	// pendingReplies bounds the requests a connection may have in flight in
	// the log; a client that pipelines more is slowed by TCP backpressure.
	pendingReplies = 4096
	// readAhead is how many decoded frames wait for the dispatcher.
	readAhead = 256
)

// Server accepts wire-protocol connections for one store.
type Server struct {
	Deps
	ln net.Listener

	counter    *connCounter   // connections per store and address, against limits
	refusalLog logevery.Every // refused connections: one warning per interval
	slowLog    logevery.Every // connections cut for a slow frame: likewise
	acceptLog  logevery.Every // failed accepts: likewise
	damagedLog logevery.Every // Publish frames refused for a checksum: likewise
	limitLog   logevery.Every // registrations refused over a limit: likewise
	registered *budget        // source registrations of every connection, against MaxSources
	receivers  *budget        // receiver names registered on every connection, against MaxReceivers
	owners     receiverOwners // receiver names' claims against anonymous Consumed (receivers_owned.go)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// limitLogInterval is how often a store repeats a warning about clients
// over a limit; the warning counts the ones in between.
const limitLogInterval = 10 * time.Second

// New listens for clients on addr (over TLS when serverTLS is set) and
// returns the server, which accepts nothing until Serve. The zero fields of
// d.Limits take their defaults (Limits).
func New(addr string, serverTLS *tls.Config, d Deps) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for clients on %s: %w (is another store using the port?)", addr, err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	d.Limits = d.Limits.withDefaults(d.ActivityTimeout)
	return &Server{
		Deps:       d,
		ln:         ln,
		conns:      map[net.Conn]struct{}{},
		counter:    newConnCounter(d.Limits, processConnBudget()),
		refusalLog: logevery.Every{Interval: limitLogInterval},
		slowLog:    logevery.Every{Interval: limitLogInterval},
		acceptLog:  logevery.Every{Interval: limitLogInterval},
		damagedLog: logevery.Every{Interval: limitLogInterval},
		limitLog:   logevery.Every{Interval: limitLogInterval},
		registered: &budget{max: d.Limits.MaxSources},
		receivers:  &budget{max: d.Limits.MaxReceivers},
	}, nil
}

// Addr is the address the server listens on.
func (cs *Server) Addr() net.Addr { return cs.ln.Addr() }

// Serve accepts connections until HangUp; each connection's requests are
// served until ctx ends or the connection closes. A connection over a
// limit (Limits) is refused at once.
func (cs *Server) Serve(ctx context.Context) {
	for {
		nc, err := cs.ln.Accept()
		if err != nil {
			cs.mu.Lock()
			closed := cs.closed
			cs.mu.Unlock()
			if closed {
				return
			}
			if dropped, ok := cs.acceptLog.Allow(time.Now()); ok {
				cs.Log.Warn("accepting a client connection failed", "err", err, "failed_since_last_warning", dropped)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		key, reason, admitted := cs.counter.admit(nc.RemoteAddr())
		if !admitted {
			cs.refuse(nc, reason, key)
			continue
		}
		cs.mu.Lock()
		if cs.closed {
			cs.mu.Unlock()
			cs.counter.release(key)
			nc.Close()
			return
		}
		cs.conns[nc] = struct{}{}
		cs.wg.Add(1)
		cs.mu.Unlock()
		go func() {
			defer cs.wg.Done()
			defer cs.counter.release(key)
			cs.handle(ctx, nc)
			cs.mu.Lock()
			delete(cs.conns, nc)
			cs.mu.Unlock()
		}()
	}
}

// HangUp stops accepting and closes every connection, without waiting for
// their goroutines: a connection's writer may be waiting for raft to answer
// a proposal, which a raft that met a faulted log answers only once it is
// shut down (the store waits for them after that, WaitConns).
func (cs *Server) HangUp() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	cs.ln.Close()
	for nc := range cs.conns {
		nc.Close()
	}
}

// WaitConns waits for the connections' goroutines to end, at most bound
// (none: for good). It reports whether they did.
func (cs *Server) WaitConns(bound time.Duration) bool {
	if bound <= 0 {
		cs.wg.Wait()
		return true
	}
	done := make(chan struct{})
	go func() {
		cs.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(bound):
		return false
	}
}
