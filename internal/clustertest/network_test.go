package clustertest

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"umstore/storegroup"
)

// listen starts an echo server on loopback and returns its address.
func listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func dialOK(t *testing.T, d storegroup.DialFunc, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialRefused(t *testing.T, d storegroup.DialFunc, addr string) {
	t.Helper()
	c, err := d(context.Background(), "tcp", addr)
	var cut errCut
	if !errors.As(err, &cut) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial %s across a cut: got %v, want a refusal", addr, err)
	}
}

// echoes reports whether the connection still carries bytes both ways.
func echoes(c net.Conn) bool {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		return false
	}
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	return err == nil
}

// Partition refuses dials across the cut and closes what is open across it,
// leaves every other link alone, and Heal lets dials through again.
func TestNetworkPartitionAndHeal(t *testing.T) {
	n := newNetwork()
	b, c, outside := listen(t), listen(t), listen(t)
	n.setMembers([][]storegroup.Member{{
		{Name: "A", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2"},
		{Name: "B", RaftAddr: b, ClientAddr: "127.0.0.1:3"},
		{Name: "C", RaftAddr: c, ClientAddr: "127.0.0.1:4"},
	}})
	fromA := n.dialer("A")
	ab, ac := dialOK(t, fromA, b), dialOK(t, fromA, c)
	if !echoes(ab) || !echoes(ac) {
		t.Fatal("connections do not carry bytes before any cut")
	}

	n.partition([][]string{{"A"}, {"B"}})
	if echoes(ab) {
		t.Fatal("a connection across the cut still carries bytes")
	}
	dialRefused(t, fromA, b)
	dialRefused(t, n.dialer("B"), "127.0.0.1:2") // both directions, client addresses too
	if !echoes(ac) {
		t.Fatal("a connection not across the cut was closed")
	}
	dialOK(t, fromA, c)
	dialOK(t, fromA, outside) // an address of no store is never refused
	if got := n.cuts(); len(got) != 1 || got[0] != "A-B" {
		t.Fatalf("cuts = %v, want [A-B]", got)
	}

	n.heal()
	if !echoes(dialOK(t, fromA, b)) {
		t.Fatal("a dial after Heal does not carry bytes")
	}
	// Closed connections are forgotten, so the network holds only open ones.
	ac.Close()
	n.mu.Lock()
	open := len(n.conns)
	n.mu.Unlock()
	if open != 3 { // the second dial to C, the one outside, the one after Heal
		t.Fatalf("the network tracks %d connections, want 3", open)
	}
}
