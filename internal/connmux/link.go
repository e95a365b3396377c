package connmux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"umstore/wire"
)

// A ReqID on the shared connection is the lane's number in the bits from
// laneShift up and the lane's own ReqID below: 2^24 lanes over a
// connection's life, 2^40 requests per lane.
const (
	laneShift = 40
	localMask = 1<<laneShift - 1
	maxLanes  = 1<<(64-laneShift) - 1
)

// flushBound bounds how long a write of the shared connection may wait
// while the store sends nothing back: a store that stops reading and
// answering fails the connection for every lane rather than holding their
// frames for ever. A store that stops reading but keeps answering is
// pushing back (its window of proposals for the connection is full), not
// gone: each frame it sends extends the write by flushBound again. A
// lane's own write deadline only ever lengthens the bound: one session's
// short deadline (a goodbye's) must not fail every other session's writes.
var flushBound = 5 * time.Second // a variable for the tests only

// closeFlushBound bounds the last write when the last lane closes (its
// goodbye may still be buffered).
const closeFlushBound = time.Second

// link is one shared connection and its lanes.
type link struct {
	pool *Pool
	key  string
	addr string

	ready   chan struct{} // closed when the dial ended; then conn/welcome or dialErr are set
	conn    *wire.Conn
	welcome *wire.Welcome
	dialErr error

	kick chan struct{} // asks the writer to flush
	stop chan struct{} // closed when the connection ends

	// flushing is set while the writer's flush is under way, for the
	// reader to extend its deadline as the store answers.
	flushing atomic.Bool

	// heard is when the store last sent anything on the connection (unix
	// nanoseconds): it is alive for every lane, whichever lane it answered.
	heard atomic.Int64

	mu       sync.Mutex
	waiters  int // Dial calls waiting for this connection and not yet given a lane
	lanes    map[uint64]*Lane
	sources  map[string]*Lane // the lane that registered each source: where HeldBack and Delivery go
	next     uint64           // the last lane number given
	err      error            // why the connection ended; nil while it is open
	deadline time.Time        // the latest write deadline a lane set (a later one than flushBound lengthens a write's bound)
}

func newLink(p *Pool, key, addr string) *link {
	return &link{pool: p, key: key, addr: addr, ready: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
		lanes: map[uint64]*Lane{}, sources: map[string]*Lane{}}
}

// dial opens the connection on behalf of every waiter: one caller giving
// up does not end it for the others (the dialer's own time-out bounds it).
func (lk *link) dial(d *wire.Dialer) {
	conn, w, err := d.Dial(context.Background(), lk.addr)
	if err != nil {
		lk.dialErr = err
		lk.mu.Lock()
		lk.err = err
		lk.mu.Unlock()
		lk.pool.forget(lk)
		close(lk.ready)
		return
	}
	lk.mu.Lock()
	lk.conn, lk.welcome = conn, w // under mu too: giveUp reads conn to know the dial ended
	unused := lk.waiters == 0 && len(lk.lanes) == 0
	lk.mu.Unlock()
	close(lk.ready)
	go lk.read()
	go lk.write()
	if unused {
		lk.end(errUnused)
	}
}

var (
	errUnused    = errors.New("no session uses the connection")
	errAbandoned = errors.New("a session found the store silent and gave the connection up")
)

// wait counts one more caller waiting for a lane, and reports false when
// the connection can take no more lanes (it ended, or numbered its last).
func (lk *link) wait() bool {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.err != nil || lk.next >= maxLanes {
		return false
	}
	lk.waiters++
	return true
}

// giveUp is a waiter leaving without a lane; a connection nobody waits
// for and no lane uses is closed.
func (lk *link) giveUp() {
	lk.mu.Lock()
	lk.waiters--
	unused := lk.waiters == 0 && len(lk.lanes) == 0 && lk.conn != nil && lk.err == nil
	lk.mu.Unlock()
	if unused {
		lk.end(errUnused)
	}
}

// add turns a waiter into a new lane; nil when the connection ended or
// has numbered its last lane meanwhile.
func (lk *link) add() *Lane {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	lk.waiters--
	if lk.err != nil || lk.next >= maxLanes {
		return nil
	}
	lk.next++
	l := newLane(lk, lk.next)
	lk.lanes[l.id] = l
	return l
}

// drop removes a closed lane; the connection ends with its last lane.
func (lk *link) drop(l *Lane) {
	lk.mu.Lock()
	delete(lk.lanes, l.id)
	for src, owner := range lk.sources {
		if owner == l {
			delete(lk.sources, src)
		}
	}
	last := len(lk.lanes) == 0 && lk.waiters == 0 && lk.err == nil
	lk.mu.Unlock()
	if last {
		lk.pool.forget(lk)
		_ = lk.conn.SetWriteDeadline(time.Now().Add(closeFlushBound))
		_ = lk.conn.Flush() // a goodbye may still be buffered
		lk.end(errUnused)
	}
}

// end closes the connection, once, and fails every lane with err.
func (lk *link) end(err error) {
	lk.mu.Lock()
	if lk.err != nil {
		lk.mu.Unlock()
		return
	}
	lk.err = err
	lanes := make([]*Lane, 0, len(lk.lanes))
	for _, l := range lk.lanes {
		lanes = append(lanes, l)
	}
	lk.mu.Unlock()
	lk.pool.forget(lk)
	close(lk.stop)
	lk.conn.Close()
	ended := fmt.Errorf("shared connection to store %s: %w", lk.addr, err)
	for _, l := range lanes {
		l.fail(ended)
	}
}

// read routes every frame the store sends to its lane, until the
// connection fails.
func (lk *link) read() {
	for {
		m, err := lk.conn.Read()
		if err != nil {
			if wire.IsFatal(err) {
				lk.end(err)
				return
			}
			lk.broadcast(err) // an unreadable frame: every lane hears of it, as on its own connection
			continue
		}
		now := time.Now()
		lk.heard.Store(now.UnixNano())
		if lk.flushing.Load() {
			// The store answers while our write waits: it is alive and
			// pushing back, so the write may wait on.
			_ = lk.conn.SetWriteDeadline(now.Add(flushBound))
		}
		lk.route(m)
	}
}

// route hands m to the lane it answers: by the lane number in its ReqID,
// else by its source, else to every lane (a redirect or error about the
// connection as a whole). An answer for a lane that has closed is dropped.
func (lk *link) route(m wire.Message) {
	if id, ok := wire.ReqIDOf(m); ok && id>>laneShift != 0 {
		lk.mu.Lock()
		l := lk.lanes[id>>laneShift]
		if r, ok := m.(*wire.Registered); ok && l != nil {
			if src := l.registering(r.Source); src != "" {
				lk.sources[src] = l
			}
		}
		lk.mu.Unlock()
		if l != nil {
			wire.SetReqID(m, id&localMask)
			l.deliver(item{m: m})
		}
		return
	}
	if src := sourceOf(m); src != "" {
		lk.mu.Lock()
		l := lk.sources[src]
		lk.mu.Unlock()
		if l != nil {
			l.deliver(item{m: m})
		}
		return
	}
	lk.broadcast(m)
}

// broadcast hands a frame, or a non-fatal read error, to every lane.
func (lk *link) broadcast(v any) {
	lk.mu.Lock()
	lanes := make([]*Lane, 0, len(lk.lanes))
	for _, l := range lk.lanes {
		lanes = append(lanes, l)
	}
	lk.mu.Unlock()
	for _, l := range lanes {
		if m, ok := v.(wire.Message); ok {
			l.deliver(item{m: m})
		} else {
			l.deliver(item{err: v.(error)})
		}
	}
}

// sourceOf is the source a frame without a ReqID is about, "" if none.
func sourceOf(m wire.Message) string {
	switch m := m.(type) {
	case *wire.HeldBack:
		return m.Source
	case *wire.Delivery:
		return m.Source
	}
	return ""
}

// write flushes what the lanes wrote whenever one asks, until the
// connection ends: frames written by many lanes while a write is under
// way go out together in the next.
func (lk *link) write() {
	for {
		select {
		case <-lk.kick:
		case <-lk.stop:
			return
		}
		lk.mu.Lock()
		dl := lk.deadline
		lk.mu.Unlock()
		if least := time.Now().Add(flushBound); dl.Before(least) {
			dl = least
		}
		_ = lk.conn.SetWriteDeadline(dl)
		lk.flushing.Store(true)
		err := lk.conn.Flush()
		lk.flushing.Store(false)
		if err != nil {
			lk.end(err)
			return
		}
	}
}

// flush asks the writer to send what is buffered.
func (lk *link) flush() {
	select {
	case lk.kick <- struct{}{}:
	default:
	}
}

func (lk *link) setWriteDeadline(t time.Time) {
	lk.mu.Lock()
	lk.deadline = t
	lk.mu.Unlock()
}

// ended is why the connection ended, nil while it is open.
func (lk *link) ended() error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.err == nil {
		return nil
	}
	return fmt.Errorf("shared connection to store %s: %w", lk.addr, lk.err)
}
