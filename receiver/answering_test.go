package receiver_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/internal/testmain"
	"umstore/receiver"
)

// A group without its majority costs a reader a short bound (issue 28
// case 2): the reader asks every group at once, and a group whose
// reachable store has known no leader for longer than an election takes
// fails at once. Group 2 here is as on a paused host: two of its stores
// accept connections and never answer (their ports are held by silent
// listeners), the third answers "no leader"; everything is in group 1.
// Before, the reader asked the groups one after the other, and each of its
// requests to group 2 waited out the silent stores and went round the
// group until the group client gave up.
func TestReaderDoesNotWaitForALeaderlessGroup(t *testing.T) {
	testmain.Slow(t)
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	payloads := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")}
	for g := 1; g <= 2; g++ {
		if err := c.PublishDirect(ctx, g, "s", 1, payloads); err != nil {
			t.Fatal(err)
		}
	}
	g2 := c.Members(2)
	for _, m := range g2[:2] {
		c.Kill(m.Name)
		silentListener(t, m.ClientAddr)
	}
	c.Eventually(10*time.Second, "group 2 has no leader", func() bool { return c.Leader(2) == nil })
	// Its third store says so for longer than an election takes: the group
	// lost its majority, and a client need not wait for it.
	time.Sleep(groupclient.LostMajorityAfter + 500*time.Millisecond)

	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = "s", c.Addrs()
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	known, err := r.Known(ctx)
	if err != nil || !known {
		t.Fatalf("Known = %v, %v; want true from group 1", known, err)
	}
	var got []string
	if err := r.Read(ctx, receiver.Resume, 5, func(m receiver.Message) error {
		got = append(got, string(m.Payload))
		return nil
	}); err != nil {
		t.Fatalf("Read: %v", err)
	}
	took := time.Since(start)
	t.Logf("Known and Read 1-5 with group 2 leaderless: %v", took.Round(10*time.Millisecond))
	if len(got) != 5 || got[0] != "a" || got[4] != "e" {
		t.Fatalf("read %q, want a..e", got)
	}
	// Two rounds of asking every group (Known, then Resume's oldest), each
	// at most the half-second the others get once one answered.
	if took > 1500*time.Millisecond {
		t.Errorf("Known and Read took %v with group 2 leaderless, want at most 1.5s", took.Round(10*time.Millisecond))
	}
}

// silentListener takes addr and accepts connections on it that it reads
// and never answers: a paused process, whose kernel still accepts.
func silentListener(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
			go func() { _, _ = io.Copy(io.Discard, conn) }()
		}
	}()
}
