package publisher

import (
	"sync"
	"time"
)

// sweeper checks the silence of every stream on the connections one
// Connections shares, from one goroutine, and wakes a stream only when its
// liveness check could act: the store has been quiet for it long enough
// to ping, probe or give up. A stream on a connection of its own keeps a
// ticker; ten thousand sources sharing connections would otherwise wake
// twenty thousand goroutines four times a second to find, nearly always,
// that the shared connection was heard a moment ago.
type sweeper struct {
	mu      sync.Mutex
	streams map[*sweptStream]struct{}
	running bool
}

// sweptStream is one stream's entry: what its wake-up depends on, and the
// channel its check is woken on (buffered: a wake-up not yet taken is not
// doubled).
type sweptStream struct {
	g     *group
	heard func() time.Time // when the shared connection was last heard
	bound time.Duration
	base  time.Duration
	wake  chan time.Time
}

// add registers a stream's liveness checks, every base/4 at most, and
// returns the channel they arrive on and the func that ends them.
func (w *sweeper) add(g *group, heard func() time.Time, bound, base time.Duration) (<-chan time.Time, func()) {
	e := &sweptStream{g: g, heard: heard, bound: bound, base: base, wake: make(chan time.Time, 1)}
	w.mu.Lock()
	if w.streams == nil {
		w.streams = map[*sweptStream]struct{}{}
	}
	w.streams[e] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
	w.mu.Unlock()
	return e.wake, func() {
		w.mu.Lock()
		delete(w.streams, e)
		w.mu.Unlock()
	}
}

// run sweeps at the shortest check period of the streams registered, and
// ends when none is left (Connections has nothing to close).
func (w *sweeper) run() {
	for {
		w.mu.Lock()
		period := time.Duration(0)
		for e := range w.streams {
			if p := e.base / 4; period == 0 || p < period {
				period = p
			}
		}
		if period == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		time.Sleep(period)
		w.sweep(time.Now())
	}
}

// sweep wakes every stream whose check could act now.
func (w *sweeper) sweep(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for e := range w.streams {
		if e.due(now) {
			select {
			case e.wake <- now:
			default:
			}
		}
	}
}

// due reports whether the stream's check (groupStream.check, probe) could
// do anything: only once the group has been quiet for the stream for half
// its bound (a Ping, then a stall past the bound) or a base bound (the
// probe of the other members). Before that every check finds nothing.
func (e *sweptStream) due(now time.Time) bool {
	e.g.mu.Lock()
	lastHeard := e.g.lastHeard
	e.g.mu.Unlock()
	return quietFor(now, lastHeard, e.heard) >= min(e.bound/2, e.base)
}

// quietFor is how long the group has been silent for a stream at now:
// since lastHeard, the stream's own last answer, or, on a shared
// connection (heard not nil), since the store last answered any stream on
// it, as long as the stream's own silence is under sharedLiveness.
func quietFor(now, lastHeard time.Time, heard func() time.Time) time.Duration {
	quiet := now.Sub(lastHeard)
	if heard != nil && quiet < sharedLiveness {
		if h := heard(); h.After(lastHeard) {
			quiet = now.Sub(h)
		}
	}
	return quiet
}
