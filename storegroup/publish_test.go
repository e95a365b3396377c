package storegroup_test

import (
	"fmt"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/repository"
	"umstore/wire"
)

// A client that pipelines many small frames gets every one acknowledged,
// in order, for its own range, while the leader proposes consecutive
// frames together; a frame that does not continue the one before (a gap)
// keeps its place. Every member ends with the same messages.
func TestPipelinedSmallFramesShareEntries(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	cl := dial(t, clientAddr(c, leader.Name()))
	if _, ok := cl.call(&wire.Register{ReqID: 1, Source: "m", Session: "s1"}).(*wire.Registered); !ok {
		t.Fatal("registration refused")
	}
	// Sequence numbers 1..1000, then 1201..2200: a gap of 200.
	var seqs []uint64
	for s := uint64(1); s <= 1000; s++ {
		seqs = append(seqs, s)
	}
	for s := uint64(1201); s <= 2200; s++ {
		seqs = append(seqs, s)
	}
	before := leader.Status().LastIndex
	_ = cl.c.NetConn().SetDeadline(time.Now().Add(60 * time.Second))
	for i, s := range seqs {
		p := &wire.Publish{ReqID: uint64(100 + i), Source: "m", FirstSeq: s, Payloads: [][]byte{[]byte(fmt.Sprintf("m-%d", s))}}
		if err := cl.c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.c.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		m, err := cl.c.Read()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		ack, ok := m.(*wire.Ack)
		if !ok || ack.ReqID != uint64(100+i) || ack.FirstSeq != s || ack.LastSeq != s {
			t.Fatalf("answer %d is %#v, want the Ack of request %d for sequence number %d", i, m, 100+i, s)
		}
	}
	entries := leader.Status().LastIndex - before
	t.Logf("%d frames took %d raft entries", len(seqs), entries)
	if entries >= uint64(len(seqs))/2 {
		t.Fatalf("%d frames took %d raft entries: consecutive frames were not proposed together", len(seqs), entries)
	}
	c.Eventually(30*time.Second, "every member holds the 2000 messages with the gap", func() bool {
		for _, mb := range c.Members(1) {
			info, ok, err := c.Store(mb.Name).Repository().Source("m")
			if err != nil || !ok || info.Count != 2000 || info.HighSeq != 2200 || len(info.Gaps) != 1 || info.Gaps[0] != (repository.Range{From: 1001, To: 1200}) {
				return false
			}
		}
		return true
	})
	msgs, err := leader.Repository().Read("m", 990, 1210, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 21 || msgs[10].Seq != 1000 || msgs[11].Seq != 1201 || string(msgs[11].Payload) != "m-1201" {
		t.Fatalf("read 990..1210 around the gap: %d messages, %+v", len(msgs), msgs)
	}
}
