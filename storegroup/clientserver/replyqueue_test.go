package clientserver

import (
	"testing"
	"time"

	"umstore/wire"
)

func okReply(id uint64) reply { return reply{msg: &wire.OK{ReqID: id}} }

func replyID(t *testing.T, r reply) uint64 {
	t.Helper()
	return r.msg.(*wire.OK).ReqID
}

// Answers leave in the order they came, however the queue's room is
// reused; a full queue holds its writer back until one is taken; close
// hands over what is left, then reports the end.
func TestReplyQueueOrderBoundAndClose(t *testing.T) {
	q := newReplyQueue(4)
	next, want := uint64(1), uint64(1)
	// Interleave puts and gets so the queue wraps and compacts many times.
	for round := 0; round < 200; round++ {
		for q.len() < 3 {
			q.put(okReply(next))
			next++
		}
		for range 2 {
			r, ok := q.get()
			if !ok || replyID(t, r) != want {
				t.Fatalf("round %d: got %+v (ok %v), want answer %d", round, r.msg, ok, want)
			}
			want++
		}
	}
	if cap(q.items) > 8 {
		t.Fatalf("the queue grew to room for %d answers with at most 4 queued", cap(q.items))
	}

	q.put(okReply(next))
	next++
	if q.len() != 2 {
		t.Fatalf("len %d, want 2", q.len())
	}
	q.put(okReply(next))
	next++
	q.put(okReply(next))
	next++
	put := make(chan struct{})
	go func() {
		q.put(okReply(next)) // the fifth: waits for room
		close(put)
	}()
	select {
	case <-put:
		t.Fatal("a put into a full queue did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	if r, _ := q.get(); replyID(t, r) != want {
		t.Fatalf("got %d, want %d", replyID(t, r), want)
	}
	want++
	select {
	case <-put:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting put was not let in when room was made")
	}
	q.close()
	for q.len() > 0 {
		if r, ok := q.get(); !ok || replyID(t, r) != want {
			t.Fatalf("after close: got %+v (ok %v), want %d", r.msg, ok, want)
		}
		want++
	}
	if _, ok := q.get(); ok {
		t.Fatal("get on a closed, empty queue reported an answer")
	}
	if want != next+1 {
		t.Fatalf("%d answers came out, %d went in", want-1, next)
	}
}
