package connmux

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"umstore/wire"
)

// Lane is one session over a shared connection (a wire.FrameConn). One
// goroutine may Read while others write. Flush hands the buffered frames
// to the connection's writer and returns at once: a failed write shows as
// the next Read's (and Write's) error.
type Lane struct {
	link *link
	id   uint64

	mu       sync.Mutex
	queue    []item        // answers routed here, not yet read
	wake     chan struct{} // a new item, an end, or a new read deadline
	err      error         // why the lane ended; nil while open
	deadline time.Time     // Read's
	source   string        // the source of the last Register written, until its answer comes
}

// item is one thing a Read returns: a frame or a non-fatal read error.
type item struct {
	m   wire.Message
	err error
}

func newLane(lk *link, id uint64) *Lane {
	return &Lane{link: lk, id: id, wake: make(chan struct{}, 1)}
}

var _ wire.FrameConn = (*Lane)(nil)

// Read returns the next answer routed to this lane, waiting until one
// comes, the lane ends, or its read deadline passes (an error for which
// net.Error's Timeout is true).
func (l *Lane) Read() (wire.Message, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		l.mu.Lock()
		if len(l.queue) > 0 {
			it := l.queue[0]
			l.queue[0] = item{}
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return it.m, it.err
		}
		err, dl := l.err, l.deadline
		l.mu.Unlock()
		if err != nil {
			return nil, err
		}
		var expired <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return nil, fmt.Errorf("read from store %s: %w", l.link.addr, os.ErrDeadlineExceeded)
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-l.wake:
		case <-expired:
		}
	}
}

// Write buffers m on the shared connection, its ReqID carrying the lane's
// number there.
func (l *Lane) Write(m wire.Message) error {
	if err := l.ended(); err != nil {
		return err
	}
	switch r := m.(type) {
	case *wire.Register:
		l.registers(r.Source)
	case *wire.RegisterSource:
		l.registers(r.Source)
	}
	if id, ok := wire.ReqIDOf(m); ok {
		wire.SetReqID(m, l.id<<laneShift|id&localMask)
		defer wire.SetReqID(m, id)
	}
	return l.link.conn.Write(m)
}

// Flush asks the shared connection's writer to send what is buffered.
func (l *Lane) Flush() error {
	if err := l.ended(); err != nil {
		return err
	}
	l.link.flush()
	return nil
}

// Send is Write and Flush.
func (l *Lane) Send(m wire.Message) error {
	if err := l.Write(m); err != nil {
		return err
	}
	return l.Flush()
}

// Buffered is how many bytes of the shared connection wait for a write
// (every lane's).
func (l *Lane) Buffered() int { return l.link.conn.Buffered() }

// SetDeadline sets the read and write deadlines.
func (l *Lane) SetDeadline(t time.Time) error {
	_ = l.SetReadDeadline(t)
	return l.SetWriteDeadline(t)
}

// SetReadDeadline bounds Read (zero: no bound).
func (l *Lane) SetReadDeadline(t time.Time) error {
	l.mu.Lock()
	l.deadline = t
	l.mu.Unlock()
	l.poke()
	return nil
}

// SetWriteDeadline asks that the shared connection's writes may wait
// until t: the latest deadline any lane set holds for the next write, but
// never less than flushBound, which the store's answers extend (link.go).
func (l *Lane) SetWriteDeadline(t time.Time) error {
	l.link.setWriteDeadline(t)
	return nil
}

// Close ends this lane only: its pending and later answers are dropped. A
// source it registered stays registered on the shared connection until
// the session says goodbye (KeepAlive Leaving), registers again, or the
// connection closes, as it would on a connection of its own that stayed
// open.
func (l *Lane) Close() error {
	if !l.fail(fmt.Errorf("lane to store %s: %w", l.link.addr, net.ErrClosed)) {
		return nil
	}
	l.link.drop(l)
	return nil
}

// Abandon closes the shared connection for every lane: the store went
// silent, or another leads now, and every lane would find the same.
func (l *Lane) Abandon() {
	l.link.end(errAbandoned)
}

// Heard is when the store last sent anything on the shared connection,
// to any lane (zero before it did): a store that answers some lanes is
// alive for all of them, though one lane's answer may wait behind many
// others' (a connection's window of proposals in the store).
func (l *Lane) Heard() time.Time {
	if n := l.link.heard.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Store is the address of the store the lane goes to.
func (l *Lane) Store() string { return l.link.addr }

// deliver queues an answer for Read.
func (l *Lane) deliver(it item) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, it)
	l.mu.Unlock()
	l.poke()
}

// fail ends the lane with err, and reports whether it was open. Answers
// already queued are still read first.
func (l *Lane) fail(err error) bool {
	l.mu.Lock()
	open := l.err == nil
	if open {
		l.err = err
	}
	l.mu.Unlock()
	l.poke()
	return open
}

func (l *Lane) ended() error {
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.link.ended()
}

func (l *Lane) registers(source string) {
	l.mu.Lock()
	l.source = source
	l.mu.Unlock()
}

// registering returns the source whose registration an answer confirms:
// the one the lane last asked for (the answer's own, from a store that
// names it).
func (l *Lane) registering(answered string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if answered != "" {
		return answered
	}
	return l.source
}

func (l *Lane) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}
