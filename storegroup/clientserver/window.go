package clientserver

import (
	"context"
)

// Back-pressure. Publish frames of one connection are proposed as they
// come, but at most maxProposalsInFlight at a time: the connection's window.
// While the window is full, later frames queue in the connection, and are
// proposed together once a slot frees (see gather, publish.go). A slot is
// taken before a frame is proposed and freed once its answer is written, so
// a client that does not read its answers stops being read from.
//
// The bound was chosen by measurement (BENCH.md): with 4 proposals in flight
// a publisher with a window of 4096 messages of 1 KiB kept only half its
// window in the log; 16 proposals of at most 512 KiB took 1 KiB messages
// from 23k to 35k msgs/s.
const maxProposalsInFlight = 16

// window is one connection's slots for Publish proposals in the log.
type window chan struct{}

func newWindow() window { return make(window, maxProposalsInFlight) }

// take waits for a free slot, and reports false if ctx ended first.
func (w window) take(ctx context.Context) bool {
	select {
	case w <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release frees a slot that take took.
func (w window) release() { <-w }
