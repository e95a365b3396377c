package clientserver

import "sync"

// replyQueue carries a connection's answers, in request order, from the
// goroutine that reads its requests to the one that writes the answers. It
// holds at most its limit (pendingReplies) and blocks the reader beyond
// it, as a buffered channel would; unlike one, it takes memory only for
// the answers it holds. A channel of pendingReplies answers cost every
// connection about 400 KiB zeroed when it was accepted: a thousand clients
// connecting at once kept a core busy clearing memory for a second, long
// enough for the stores' raft heartbeats to starve and leaders to step
// down.
type replyQueue struct {
	mu       sync.Mutex
	notEmpty sync.Cond
	notFull  sync.Cond
	items    []reply // items[head:] are queued
	head     int
	limit    int
	closed   bool
}

func newReplyQueue(limit int) *replyQueue {
	q := &replyQueue{limit: max(limit, 1)}
	q.notEmpty.L = &q.mu
	q.notFull.L = &q.mu
	return q
}

// put queues r, waiting while the queue is full. Like a send on a closed
// channel, a put after close is a bug, and panics.
func (q *replyQueue) put(r reply) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items)-q.head >= q.limit && !q.closed {
		q.notFull.Wait()
	}
	if q.closed {
		panic("clientserver: reply queued after its connection's queue closed")
	}
	if q.head > 0 && len(q.items) == cap(q.items) {
		// Reuse the room of the answers already taken rather than grow.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, r)
	q.notEmpty.Signal()
}

// get takes the oldest answer, waiting for one; ok is false once the queue
// is closed and empty.
func (q *replyQueue) get() (r reply, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == q.head && !q.closed {
		q.notEmpty.Wait()
	}
	if len(q.items) == q.head {
		return reply{}, false
	}
	r = q.items[q.head]
	q.items[q.head] = reply{} // let what it refers to go
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.notFull.Signal()
	return r, true
}

// len is how many answers are queued.
func (q *replyQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// close ends the queue: get returns what is left, then reports the end.
func (q *replyQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.notEmpty.Broadcast()
	q.notFull.Broadcast()
}
