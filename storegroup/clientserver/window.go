package clientserver

import (
	"context"
	"sync"
)

// Back-pressure. Publish frames of one connection are proposed as they
// come, but at most maxProposalsInFlight of one source at a time: the
// source's window. While it is full, the source's later frames queue in
// the connection, and are proposed together once a slot frees (see gather,
// publish.go). A slot is taken before a frame is proposed and freed once
// its answer is written, so a client that does not read its answers stops
// being read from.
//
// The bound was chosen by measurement (BENCH.md): with 4 proposals in flight
// a publisher with a window of 4096 messages of 1 KiB kept only half its
// window in the log; 16 proposals of at most 512 KiB took 1 KiB messages
// from 23k to 35k msgs/s.
//
// A connection that carries many sources (a client process's publishers
// sharing one connection, as a UM context's sources share its transport)
// may have every source's window in flight, within two bounds for the
// connection as a whole: maxConnProposals proposals and maxConnBytes of
// payload. Sixteen proposals for all of them would have made a thousand
// sources wait for one another's commits.
const (
	maxProposalsInFlight = 16
	maxConnProposals     = 1024
	maxConnBytes         = 32 << 20
)

// window is one connection's slots for Publish proposals in the log. Only
// the connection's reader takes slots; the reply writer frees them.
type window struct {
	mu        sync.Mutex
	total     int            // proposals in flight
	bytes     int            // their payload bytes
	perSource map[string]int // proposals in flight per source
	freed     chan struct{}  // a slot was freed (the reader waits for it)
}

func newWindow() *window {
	return &window{perSource: map[string]int{}, freed: make(chan struct{}, 1)}
}

// take waits until source may have one more proposal in flight, and
// reports false if ctx ended first. hold then says how large it is and
// returns the func that frees the slot.
func (w *window) take(ctx context.Context, source string) bool {
	for {
		w.mu.Lock()
		if w.perSource[source] < maxProposalsInFlight && w.total < maxConnProposals && w.bytes < maxConnBytes {
			w.total++
			w.perSource[source]++
			w.mu.Unlock()
			return true
		}
		w.mu.Unlock()
		select {
		case <-w.freed:
		case <-ctx.Done():
			return false
		}
	}
}

// hold records the payload bytes of the proposal source's slot holds, and
// returns the func that frees the slot (once).
func (w *window) hold(source string, size int) (release func()) {
	w.mu.Lock()
	w.bytes += size
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { w.release(source, size) }) }
}

func (w *window) release(source string, size int) {
	w.mu.Lock()
	w.total--
	w.bytes -= size
	if w.perSource[source]--; w.perSource[source] <= 0 {
		delete(w.perSource, source)
	}
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}
