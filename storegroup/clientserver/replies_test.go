package clientserver

import (
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"umstore/repository"
	"umstore/wire"
)

// future is a raft.ApplyFuture the test decides: it resolves when done is
// closed.
type future struct {
	done chan struct{}
	resp any
}

func (f *future) Error() error { <-f.done; return nil }

func (f *future) Response() any { return f.resp }

func (f *future) Index() uint64 { return 0 }

func resolved(resp any) *future {
	f := &future{done: make(chan struct{}), resp: resp}
	close(f.done)
	return f
}

func publishResult(first, last uint64) *repository.Result {
	return &repository.Result{Publish: &repository.PublishResult{Source: "s", FirstSeq: first, LastSeq: last, HighSeq: last}}
}

// An answer already written goes out while the writer waits for a later
// proposal: at a steady publishing rate there is always a later one, and
// holding answers until the buffer fills made acknowledgements wait for
// seconds at light load.
func TestAnswerIsNotHeldBehindALaterProposal(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	cs := &Server{Deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	replies := newReplyQueue(2)
	later := &future{done: make(chan struct{}), resp: publishResult(2, 2)}
	replies.put(reply{req: &wire.Publish{ReqID: 1, Source: "s", FirstSeq: 1, Payloads: [][]byte{{1}}}, future: resolved(publishResult(1, 1))})
	replies.put(reply{req: &wire.Publish{ReqID: 2, Source: "s", FirstSeq: 2, Payloads: [][]byte{{2}}}, future: later})
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.writeReplies(wire.NewConn(server, 1<<20), replies)
	}()
	c := wire.NewConn(client, 1<<20)
	read := func() wire.Message {
		t.Helper()
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := c.Read()
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return m
	}
	if ack, ok := read().(*wire.Ack); !ok || ack.ReqID != 1 {
		t.Fatalf("first answer %+v, want the Ack of request 1", ack)
	}
	close(later.done)
	if ack, ok := read().(*wire.Ack); !ok || ack.ReqID != 2 {
		t.Fatalf("second answer %+v, want the Ack of request 2", ack)
	}
	replies.close()
	<-done
}

// Frames proposed together are each acknowledged for their own range, and
// an entry's conflicts are counted once, on the frame holding the first.
func TestPublishAckOfAMergedFrame(t *testing.T) {
	entry := &repository.PublishResult{Source: "s", FirstSeq: 1, LastSeq: 30, HighSeq: 30, Conflicts: 3, FirstConflict: 12}
	frame := func(first uint64, n int) *wire.Publish {
		return &wire.Publish{ReqID: first, Source: "s", FirstSeq: first, Payloads: make([][]byte, n)}
	}
	tests := []struct {
		name        string
		req         *wire.Publish
		first, last uint64
		conflicts   int
	}{
		{"frame before the conflicts", frame(1, 10), 1, 10, 0},
		{"frame holding the first conflict", frame(11, 10), 11, 20, 3},
		{"frame after it", frame(21, 10), 21, 30, 0},
		{"first conflict at the frame's start", frame(12, 1), 12, 12, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ack := publishAck(tt.req, entry)
			if ack.ReqID != tt.req.ReqID || ack.FirstSeq != tt.first || ack.LastSeq != tt.last || ack.Conflicts != tt.conflicts || ack.HighSeq != 30 {
				t.Fatalf("ack %+v, want range %d..%d with %d conflicts", ack, tt.first, tt.last, tt.conflicts)
			}
		})
	}
}

// A frame reaching into what retention released while the group never
// held it is answered with a Nak naming its own part of it (as many
// ranges as it meets); what the group held until retention released it,
// and a frame of the same entry above it, are acknowledged.
func TestPublishAnswerNaksWhatRetentionReleased(t *testing.T) {
	// Entry 1..30 of which 1..15 were at or below TrimmedThrough, 3..12
	// and 14..15 of them released while in a gap.
	entry := &repository.PublishResult{Source: "s", FirstSeq: 1, LastSeq: 30, HighSeq: 30, BelowRetention: 15, Duplicates: 15,
		Lost: []repository.Range{{From: 3, To: 12}, {From: 14, To: 15}}}
	frame := func(first uint64, n int) *wire.Publish {
		return &wire.Publish{ReqID: first, Source: "s", FirstSeq: first, Payloads: make([][]byte, n)}
	}
	tests := []struct {
		name string
		req  *wire.Publish
		lost []wire.Range // nil: an Ack
	}{
		{"frame inside the released part", frame(1, 10), []wire.Range{{From: 3, To: 10}}},
		{"frame across the trim", frame(11, 10), []wire.Range{{From: 11, To: 12}, {From: 14, To: 15}}},
		{"frame of held, released numbers", frame(1, 2), nil},
		{"frame of one held, released number", frame(13, 1), nil},
		{"frame above it", frame(21, 10), nil},
		{"frame starting right after it", frame(16, 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch m := publishAnswer(tt.req, entry).(type) {
			case *wire.Nak:
				last := tt.req.FirstSeq + uint64(len(tt.req.Payloads)) - 1
				if tt.lost == nil || m.ReqID != tt.req.ReqID || m.FirstSeq != tt.req.FirstSeq || m.LastSeq != last || m.HighSeq != 30 ||
					!slices.Equal(m.Lost, tt.lost) {
					t.Fatalf("answer %+v, want lost %v", m, tt.lost)
				}
			case *wire.Ack:
				if tt.lost != nil {
					t.Fatalf("answer %+v, want a Nak of %v", m, tt.lost)
				}
			default:
				t.Fatalf("answer %#v", m)
			}
		})
	}
	held := &repository.PublishResult{Source: "s", FirstSeq: 1, LastSeq: 5, HighSeq: 9, Duplicates: 5}
	if _, ok := publishAnswer(frame(1, 5), held).(*wire.Ack); !ok {
		t.Fatal("a resend of held messages must be acknowledged")
	}
}
