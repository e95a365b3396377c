package storegroup_test

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
	"umstore/wire"
)

// client is a raw wire-protocol connection for tests.
type client struct {
	t *testing.T
	c *wire.Conn
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	d := &wire.Dialer{Client: "test"}
	c, _, err := d.Dial(context.Background(), addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

func (c *client) call(m wire.Message) wire.Message {
	c.t.Helper()
	_ = c.c.NetConn().SetDeadline(time.Now().Add(15 * time.Second))
	if err := c.c.Send(m); err != nil {
		c.t.Fatalf("send %T: %v", m, err)
	}
	r, err := c.c.Read()
	if err != nil {
		c.t.Fatalf("read reply to %T: %v", m, err)
	}
	return r
}

func clientAddr(c *clustertest.Cluster, name string) string {
	for g := 1; ; g++ {
		for _, m := range c.Members(g) {
			if m.Name == name {
				return m.ClientAddr
			}
		}
	}
}

func TestGroupBootstrapsOnceWithOneIdentity(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	var id string
	c.Eventually(10*time.Second, "every member knows the group identity", func() bool {
		id = leader.Repository().GroupID()
		for _, m := range c.Members(1) {
			if s := c.Store(m.Name); s == nil || s.Repository().GroupID() != id || id == "" {
				return false
			}
		}
		return true
	})
	// Restart every store: none bootstraps again, the identity is kept.
	for _, m := range c.Members(1) {
		c.Stop(m.Name)
	}
	for _, m := range c.Members(1) {
		c.StartStore(m.Name)
	}
	leader = c.WaitLeader(1, 30*time.Second)
	if got := leader.Repository().GroupID(); got != id {
		t.Fatalf("group identity changed across a restart: %q, then %q", id, got)
	}
}

func TestPublishAckAndFollowerRedirect(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	lc := dial(t, clientAddr(c, leader.Name()))
	if r, ok := lc.call(&wire.Register{ReqID: 1, Source: "s"}).(*wire.Registered); !ok || r.HighSeq != 0 {
		t.Fatalf("register on a new source: got %#v", r)
	}
	ack, ok := lc.call(&wire.Publish{ReqID: 2, Source: "s", FirstSeq: 1, Payloads: [][]byte{[]byte("a"), []byte("b")}}).(*wire.Ack)
	if !ok || ack.FirstSeq != 1 || ack.LastSeq != 2 || ack.ReqID != 2 {
		t.Fatalf("publish: got %#v", ack)
	}
	// A duplicate is acknowledged again and changes nothing.
	if ack, ok := lc.call(&wire.Publish{ReqID: 3, Source: "s", FirstSeq: 2, Payloads: [][]byte{[]byte("b")}}).(*wire.Ack); !ok || ack.HighSeq != 2 {
		t.Fatalf("duplicate publish: got %#v", ack)
	}
	for _, m := range c.Members(1) {
		if m.Name == leader.Name() {
			continue
		}
		fc := dial(t, m.ClientAddr)
		nl, ok := fc.call(&wire.Publish{ReqID: 9, Source: "s", FirstSeq: 3, Payloads: [][]byte{[]byte("c")}}).(*wire.NotLeader)
		if !ok || nl.ReqID != 9 || nl.LeaderName != leader.Name() || nl.Leader != clientAddr(c, leader.Name()) {
			t.Fatalf("follower %s: publish got %#v, want a redirect to %s", m.Name, nl, leader.Name())
		}
	}
	rep, ok := lc.call(&wire.Fetch{ReqID: 4, Source: "s", From: 1, To: 10}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 2 || string(rep.Msgs[1].Payload) != "b" || rep.Through != 10 {
		t.Fatalf("fetch: got %#v", rep)
	}
}

// A leader that cannot reach a quorum never acknowledges a Publish: the
// answer comes once the entry's result is decided, and raft applies only
// committed entries (SPEC §4 rule 1).
func TestNoAckWithoutAQuorum(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	lc := dial(t, clientAddr(c, leader.Name()))
	if r, ok := lc.call(&wire.Register{ReqID: 9, Source: "s", Session: "p"}).(*wire.Registered); !ok {
		t.Fatalf("register: got %#v", r)
	}
	if ack, ok := lc.call(&wire.Publish{ReqID: 1, Source: "s", FirstSeq: 1, Payloads: [][]byte{[]byte("a")}}).(*wire.Ack); !ok || ack.LastSeq != 1 {
		t.Fatalf("publish with a quorum: got %#v", ack)
	}
	for _, m := range c.Members(1) {
		if m.Name != leader.Name() {
			c.Stop(m.Name)
		}
	}
	switch r := lc.call(&wire.Publish{ReqID: 2, Source: "s", FirstSeq: 2, Payloads: [][]byte{[]byte("b")}}).(type) {
	case *wire.Ack:
		t.Fatalf("a leader without a quorum acknowledged a Publish: %#v", r)
	case *wire.NotLeader, *wire.Error:
		t.Logf("publish without a quorum: %#v", r) // the publisher resends
	default:
		t.Fatalf("publish without a quorum: got %#v, want a redirect or an error", r)
	}
}

func TestBadInputNeverStopsTheStore(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.MaxFrame = 1 << 16 })
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())

	tests := []struct {
		name  string
		raw   []byte // sent after a good handshake
		reply string // expected error code, or "" for a closed connection
	}{
		{"unknown frame type", []byte{0, 0, 0, 2, 200, 0xc0}, wire.CodeUnknown},
		{"malformed body", []byte{0, 0, 0, 3, byte(wire.TypePublish), 0xdd, 0xff}, wire.CodeBadRequest},
		{"oversized frame", binary.BigEndian.AppendUint32(nil, 1<<30), wire.CodeTooLarge},
		{"publish with sequence 0", mustEncode(t, &wire.Publish{ReqID: 5, Source: "s", FirstSeq: 0, Payloads: [][]byte{{1}}}), wire.CodeBadRequest},
		{"publish without a source", mustEncode(t, &wire.Publish{ReqID: 6, FirstSeq: 1, Payloads: [][]byte{{1}}}), wire.CodeBadRequest},
		{"empty batch", mustEncode(t, &wire.Publish{ReqID: 7, Source: "s", FirstSeq: 1}), wire.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := dial(t, addr)
			if _, err := cl.c.NetConn().Write(tt.raw); err != nil {
				t.Fatal(err)
			}
			_ = cl.c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
			m, err := cl.c.Read()
			if err != nil {
				t.Fatalf("no reply: %v", err)
			}
			if e, ok := m.(*wire.Error); !ok || e.Code != tt.reply {
				t.Fatalf("got %#v, want an error with code %s", m, tt.reply)
			}
		})
	}
	// A client speaking another version is refused at the handshake.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw := wire.NewConn(nc, 0)
	_ = raw.Send(&wire.Hello{Version: wire.Version + 7, Client: "future"})
	if m, err := raw.Read(); err != nil || m.(*wire.Error).Code != wire.CodeVersion {
		t.Fatalf("future version: got %#v, %v", m, err)
	}
	// The store still serves.
	cl := dial(t, addr)
	if _, ok := cl.call(&wire.Register{ReqID: 1, Source: "after"}).(*wire.Registered); !ok {
		t.Fatal("store stopped serving after bad input")
	}
}

func mustEncode(t *testing.T, m wire.Message) []byte {
	b, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
