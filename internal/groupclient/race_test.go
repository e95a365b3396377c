package groupclient

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"umstore/wire"
)

// pausedStore accepts TCP connections and never answers: what a SIGSTOPped
// host's store looks like from outside (the kernel completes the connect).
func pausedStore(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// A paused store first in the list (the last known leader, say) costs the
// next store a head start, not the dialer's whole timeout; the paused one
// is tried last from then on.
func TestPausedStoreDoesNotHoldUpTheOthers(t *testing.T) {
	paused := pausedStore(t)
	live := newFakeStore(t, answer(&wire.SourceList{}))
	d := &wire.Dialer{Client: "test", Timeout: 3 * time.Second}
	c := New(1, []string{paused, live.addr()}, d)
	defer c.Close()
	start := time.Now()
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("reaching the live store took %v behind a paused one; want about %v", took, headStart)
	}
	// Once the paused store's handshake has timed out, it goes last.
	waitUntil(t, 5*time.Second, func() bool { return c.suspected(paused) })
	c.setHint(paused)
	if got := c.order(); got[0] != live.addr() {
		t.Fatalf("order %v: the store that did not answer in time comes first", got)
	}
}

// The stores of one client must all be of one deployment group: a list
// that mixes two groups' stores into one is refused at the store of the
// second group. Which group that is comes from the first store that
// answers (a UM store list labels groups as it likes).
func TestWrongGroupIsRefused(t *testing.T) {
	first := newFakeStore(t, answer(&wire.SourceList{}))
	other := newFakeStore(t, answer(&wire.SourceList{}))
	first.mu.Lock()
	first.group = 1
	first.mu.Unlock()
	other.mu.Lock()
	other.group = 2
	other.mu.Unlock()
	c := New(7, []string{first.addr()}, dialer())
	defer c.Close()
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatalf("the first store, of group 1, labelled 7 in the list: %v", err)
	}
	c.Close()
	c.Addrs = []string{other.addr()}
	c.setHint(other.addr())
	_, err := c.Sources(testCtx(t))
	if !errors.Is(err, ErrWrongGroup) {
		t.Fatalf("err = %v, want ErrWrongGroup", err)
	}
	if _, r := other.counts(); r != 0 {
		t.Fatalf("the store of group 2 was asked %d requests as one of group 1", r)
	}
}

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
