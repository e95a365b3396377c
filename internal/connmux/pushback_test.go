package connmux

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"umstore/wire"
)

// pausingStore is a store that, after the handshake, reads nothing for
// pause, sending a Pong every tick meanwhile if answering (a store whose
// window of proposals for the connection is full: pushing back, alive), or
// nothing (a frozen one). Then it reads on, counting the Publish frames.
func pausingStore(t *testing.T, pause time.Duration, answering bool) (addr string, publishes *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	publishes = new(atomic.Int64)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		c := wire.NewConn(nc, 0)
		defer c.Close()
		if _, err := wire.ServerHandshake(c, wire.Welcome{Store: "S1", Group: 1}, ""); err != nil {
			return
		}
		end := time.After(pause)
		tick := time.NewTicker(pause / 20)
		defer tick.Stop()
	held:
		for {
			select {
			case <-end:
				break held
			case <-tick.C:
				if answering {
					_ = c.Send(&wire.Pong{Store: "S1", Group: 1, Leading: true})
				}
			}
		}
		for {
			m, err := c.Read()
			if err != nil {
				return
			}
			switch m := m.(type) {
			case *wire.Publish:
				publishes.Add(1)
			case *wire.Ping:
				_ = c.Send(&wire.Pong{ReqID: m.ReqID, Store: "S1", Group: 1, Leading: true})
			}
		}
	}()
	return ln.Addr().String(), publishes
}

// shortFlushBound makes the shared connection's write bound 300 ms for
// the test.
func shortFlushBound(t *testing.T) {
	old := flushBound
	flushBound = 300 * time.Millisecond
	t.Cleanup(func() { flushBound = old })
}

// floodFrames is how many 64 KiB Publish frames fill more than the
// loopback socket buffers both ways, so that writes block while the store
// reads nothing.
const floodFrames = 256

func flood(t *testing.T, l *Lane) error {
	t.Helper()
	payload := make([]byte, 64<<10)
	for i := range floodFrames {
		if err := l.Send(&wire.Publish{ReqID: uint64(i + 1), Source: "s", FirstSeq: uint64(i + 1), Payloads: [][]byte{payload}}); err != nil {
			return err
		}
	}
	return nil
}

// A store that stops reading but keeps answering is pushing back: the
// shared connection waits on past flushBound, however short a write
// deadline one lane set (a goodbye's), and every frame arrives. Before,
// one session's goodbye deadline failed the connection of thousands.
func TestPushBackIsNotFailure(t *testing.T) {
	shortFlushBound(t)
	addr, publishes := pausingStore(t, 4*flushBound, true)
	p := NewPool()
	a, b := dial(t, p, addr), dial(t, p, addr)
	defer a.Close()
	defer b.Close()
	_ = b.SetWriteDeadline(time.Now().Add(10 * time.Millisecond)) // b says goodbye
	if err := flood(t, a); err != nil {
		t.Fatalf("sending while the store pushed back: %v", err)
	}
	if err := a.Send(&wire.Ping{ReqID: 1000}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := readWithin(t, a, 10*time.Second)
		if err != nil {
			t.Fatalf("the connection ended while the store pushed back: %v", err)
		}
		if pong, ok := m.(*wire.Pong); ok && pong.ReqID == 1000 {
			break
		}
	}
	if got := publishes.Load(); got != floodFrames {
		t.Fatalf("the store read %d Publish frames, want %d", got, floodFrames)
	}
}

// A store that stops reading and sends nothing fails the connection within
// flushBound of silence, for every lane.
func TestSilentStoreFailsTheConnection(t *testing.T) {
	shortFlushBound(t)
	addr, _ := pausingStore(t, 6*flushBound, false)
	p := NewPool()
	a, b := dial(t, p, addr), dial(t, p, addr)
	defer a.Close()
	defer b.Close()
	start := time.Now()
	_ = flood(t, a) // may or may not see the failure: the flush is the writer's
	_, err := readWithin(t, b, 5*flushBound)
	if err == nil || !strings.Contains(err.Error(), "shared connection") {
		t.Fatalf("lane b after %v of a silent store: %v, want the connection's end", time.Since(start), err)
	}
	if took := time.Since(start); took > 4*flushBound {
		t.Fatalf("the connection to a silent store ended after %v, want about %v", took, flushBound)
	}
}
