package groupclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"umstore/internal/connmux"
	"umstore/wire"
)

// CallTimeout bounds one request/reply round trip: a Call's, and by default
// the answer to the request that opens a session.
const CallTimeout = 10 * time.Second

// electionPause is how long a Call waits after a store answered NotLeader
// without naming a leader (an election is under way) before it asks the
// next store.
const electionPause = 100 * time.Millisecond

// Client follows the leader of one store group. Call and Open are one at a
// time (a Client is not safe for concurrent requests); Redirected and Leader
// may be called from any goroutine.
type Client struct {
	// Group is the group's index, for error messages.
	Group int
	// Addrs are the client addresses of the group's stores.
	Addrs []string
	// Dialer opens the connections (TLS, token, source address, timeout).
	Dialer *wire.Dialer
	// Pool, if set, carries the client's sessions over the process's
	// shared connections to the stores (internal/connmux) instead of a
	// connection each.
	Pool *connmux.Pool

	mu       sync.Mutex
	hint     string               // where the leader is: the store that last answered as leader, or the one a redirect named
	suspects map[string]time.Time // stores whose handshake timed out, tried last until then (race.go)
	// deploymentGroup is the group index the stores answered with: every
	// store of the client must give the same one (race.go).
	deploymentGroup int
	// learned are where the group says moved stores listen, not in Addrs;
	// learnedAt is when Learn last asked (learn.go).
	learned   []string
	learnedAt time.Time

	kept  link // Call's connection, reused by the next Call
	reqID uint64
}

// link is an open connection and the store it goes to.
type link struct {
	conn wire.FrameConn
	addr string
}

func (l *link) close() {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}

// dial opens a connection to the store at addr: a lane of the shared
// connection when the client has a Pool, a connection of its own
// otherwise.
func (c *Client) dial(ctx context.Context, addr string) (wire.FrameConn, *wire.Welcome, error) {
	if c.Pool != nil {
		l, w, err := c.Pool.Dial(ctx, c.Dialer, addr)
		if err != nil {
			return nil, nil, err // not a nil *Lane in a non-nil interface
		}
		return l, w, nil
	}
	conn, w, err := c.Dialer.Dial(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	return conn, w, nil
}

// New returns a client for the group's stores.
func New(group int, addrs []string, d *wire.Dialer) *Client {
	return &Client{Group: group, Addrs: addrs, Dialer: d}
}

// Close closes Call's connection; the next Call reconnects. Sessions handed
// out by Open belong to their caller.
func (c *Client) Close() { c.kept.close() }

// Leader returns the address of the store the client last found leading
// (or was last told leads); "" before the first answer.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hint
}

// Redirected records that a store answered m in the middle of a session
// (leadership moved): the next Call or Open starts at the leader it names,
// or, if it names none, goes through the stores in order.
func (c *Client) Redirected(m *wire.NotLeader) { c.setHint(m.Leader) }

func (c *Client) setHint(addr string) {
	c.mu.Lock()
	old := c.hint
	c.hint = addr
	c.mu.Unlock()
	c.shareHint(old, addr)
}

// order lists the stores to try: the known leader first (this client's, or
// before it knows one, where another client of the process found it: see
// hints.go), then the others in configuration order, then where the group said moved stores listen
// (Learn), and last the stores that recently did not answer in time (a
// paused host's).
func (c *Client) order() []string {
	out := []string{}
	if h := c.Leader(); h != "" {
		out = append(out, h)
	} else if h := c.sharedHint(); h != "" {
		out = append(out, h)
	}
	for _, a := range append(slices.Clone(c.Addrs), c.learnedAddrs()...) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	var fresh, slow []string
	for _, a := range out {
		if c.suspected(a) {
			slow = append(slow, a)
		} else {
			fresh = append(fresh, a)
		}
	}
	return append(fresh, slow...)
}

// Call sends req (its ReqID is set here) to the group's leader and returns
// the reply, keeping the connection for the next Call. A NotLeader answer
// is followed to the leader it names; when it names none, Call waits a
// moment and goes on to the next store, going round every store more than
// once before it gives up. A wire *Error reply is returned as the error
// (errors.As finds it).
func (c *Client) Call(ctx context.Context, req wire.Message) (wire.Message, error) {
	return c.ask(ctx, &c.kept, req, search{timeout: CallTimeout, patient: true, numbered: true})
}

// OpenOptions says how Open starts a session.
type OpenOptions struct {
	// Reply is the frame type a leader answers the opening request with
	// (wire.TypeRegistered for Register, wire.TypeDeliver for Subscribe);
	// another type counts as a failed store. 0 accepts any.
	Reply wire.Type
	// Timeout bounds each store's answer to the opening request (bounded
	// by ctx's deadline too). 0 means CallTimeout.
	Timeout time.Duration
	// NextOnError reports whether a store's Error answer sends Open on to
	// the next store; otherwise (and when nil) it ends Open, returned as
	// the error. The publisher moves on from an unavailable store but stops
	// at "source busy", which any leader would say.
	NextOnError func(*wire.Error) bool
}

// Open finds the group's leader and starts a session with it: it sends req
// (with the ReqID the caller chose) to the known leader, then to each other
// store once, following NotLeader redirects, and returns the connection
// with the first answer that is not a redirect. The connection has no
// deadline and belongs to the caller, who closes it. When no store accepts,
// Open gives up rather than waiting: the caller retries at its own pace.
func (c *Client) Open(ctx context.Context, req wire.Message, o OpenOptions) (wire.FrameConn, wire.Message, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = CallTimeout
	}
	var l link
	m, err := c.ask(ctx, &l, req, search{timeout: timeout, reply: o.Reply, nextOnError: o.NextOnError})
	if err != nil {
		l.close()
		return nil, nil, err
	}
	_ = l.conn.SetDeadline(time.Time{})
	return l.conn, m, nil
}

// search says how ask looks for the leader.
type search struct {
	timeout     time.Duration          // bounds each store's answer
	reply       wire.Type              // the answer's expected type; 0: any
	nextOnError func(*wire.Error) bool // Error answers that send ask on to the next store
	patient     bool                   // go round the stores again, pausing during elections
	numbered    bool                   // give each attempt the next ReqID
}

// ask sends req to the group's leader over l (dialing when l is closed) and
// returns the first answer that is not a redirect, leaving l open on the
// store that gave it. It is the one leader-finding loop: the budget of
// attempts covers a redirect per store and a second round.
func (c *Client) ask(parent context.Context, l *link, req wire.Message, s search) (wire.Message, error) {
	order := c.order()
	budget := 2*len(order) + 2
	var lastErr error
	// ctx is parent until a store says the group lost its majority; then
	// the other stores get lostMajorityProbe to prove it wrong (leaderless.go).
	ctx := parent
	nl := leaderless{group: c.Group}
	for hops := 0; hops < budget; hops++ {
		if err := parent.Err(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			break // the probe of the other stores is over
		}
		if l.conn == nil {
			if len(order) == 0 {
				if !s.patient || nl.lostMajority() {
					break
				}
				order = c.order()
			}
			got, tried, err := c.dialRace(ctx, order)
			order = order[tried:]
			if err != nil {
				lastErr = err
				if errors.Is(err, wire.ErrUnauthorized) {
					break // every store of a deployment checks the same token
				}
				continue
			}
			*l = got
			order = slices.DeleteFunc(order, func(a string) bool { return a == l.addr })
		}
		if s.numbered {
			c.reqID++
			wire.SetReqID(req, c.reqID)
		}
		m, err := exchange(ctx, l.conn, req, s.timeout)
		if err != nil {
			lastErr = err
			l.close()
			continue
		}
		from := l.addr
		switch m := m.(type) {
		case *wire.NotLeader:
			lastErr = fmt.Errorf("store %s is not the leader of group %d", from, c.Group)
			l.close()
			if m.Leader != "" && m.Leader != from {
				order = append([]string{m.Leader}, slices.DeleteFunc(order, func(a string) bool { return a == m.Leader })...)
				continue
			}
			wasLost := nl.lostMajority()
			nl.saw(from, m)
			if !wasLost && nl.lostMajority() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(parent, lostMajorityProbe)
				defer cancel()
			}
			if s.patient && !nl.lostMajority() {
				// An election is under way: give it a moment.
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(electionPause):
				}
			}
		case *wire.Error:
			l.close()
			err := fmt.Errorf("group %d: %w", c.Group, m)
			if s.nextOnError == nil || !s.nextOnError(m) {
				return nil, err
			}
			lastErr = err
		default:
			if s.reply != 0 && m.Type() != s.reply {
				l.close()
				lastErr = fmt.Errorf("%w: store %s answered frame type %d with frame type %d", wire.ErrMalformed, from, req.Type(), m.Type())
				continue
			}
			if p, ok := m.(*wire.Pong); ok && !p.Leading {
				// Any store answers a Ping: remember the leader it names,
				// not the store.
				c.setHint(p.Leader)
			} else {
				c.setHint(from)
			}
			return m, nil
		}
	}
	if e := nl.err(); e != nil {
		lastErr = e
	}
	if lastErr == nil {
		lastErr = errors.New("no store address")
	}
	return nil, fmt.Errorf("group %d: no leader reachable: %w", c.Group, lastErr)
}

// exchange sends req on conn and reads one answer, within timeout (and
// ctx's deadline); ctx ending closes the connection, so a cancelled caller
// never waits for a silent store.
func exchange(ctx context.Context, conn wire.FrameConn, req wire.Message, timeout time.Duration) (wire.Message, error) {
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	err := conn.Send(req)
	var m wire.Message
	if err == nil {
		m, err = conn.Read()
	}
	if !stop() {
		return nil, ctx.Err() // the connection was closed under us
	}
	return m, err
}
