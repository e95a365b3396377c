package groupclient

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"umstore/wire"
)

// A group that lost its majority (a host down or paused) is told apart
// from one that is electing, and costs a caller a short bound: once a
// store says it has known no leader for longer than an election takes,
// the group's silent stores get lostMajorityProbe, and Call and Open end
// with a LeaderlessError instead of going round the group until their
// attempts run out. Before, a patient Call went round the silent stores
// (each a dial time-out) and ended with "no leader reachable" and no word
// of why.
func TestLeaderlessGroupEndsTheSearchSoon(t *testing.T) {
	cases := []struct {
		name       string
		noLeaderMS uint64
		wantLost   bool
	}{
		{"lost its majority", 5000, true},
		{"electing", 300, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			paused1, paused2 := silentStore(t), silentStore(t)
			alone := newFakeStore(t, func(int, wire.Message) wire.Message {
				return &wire.NotLeader{NoLeaderMS: tc.noLeaderMS}
			})
			c := New(1, []string{paused1, alone.addr(), paused2}, dialer())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for _, call := range []struct {
				name string
				do   func() error
			}{
				{"Call", func() error { _, err := c.Fetch(ctx, &wire.Fetch{Source: "s"}); return err }},
				{"Open", func() error {
					_, _, err := c.Open(ctx, &wire.Register{Source: "s", Session: "x"}, OpenOptions{Reply: wire.TypeRegistered})
					return err
				}},
			} {
				if call.name == "Call" && !tc.wantLost {
					continue // a patient Call rides the election out: seconds, and not this test's point
				}
				start := time.Now()
				err := call.do()
				took := time.Since(start)
				var ll *LeaderlessError
				if !errors.As(err, &ll) {
					t.Fatalf("%s: err = %v, want a LeaderlessError", call.name, err)
				}
				if ll.LostMajority() != tc.wantLost || ll.Group != 1 {
					t.Fatalf("%s: %+v, want group 1, lost majority %v", call.name, ll, tc.wantLost)
				}
				t.Logf("%s: %v after %v", call.name, err, took.Round(10*time.Millisecond))
				if tc.wantLost && took > 1500*time.Millisecond {
					t.Errorf("%s took %v to find the group without its majority, want well under a dial time-out round", call.name, took.Round(10*time.Millisecond))
				}
			}
		})
	}
}

// silentStore is a store whose host is paused: its kernel accepts the
// connection, and nothing ever answers.
func silentStore(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
			go func() { _, _ = io.Copy(io.Discard, conn) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
