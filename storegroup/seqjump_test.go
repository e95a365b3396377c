package storegroup_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"umstore/internal/testmain"

	"umstore/internal/clustertest"
	"umstore/storegroup"
	"umstore/wire"
)

// smallJump makes a Publish skip at most 100 sequence numbers.
func smallJump(cfg *storegroup.Config) { cfg.ClientLimits.MaxSeqJump = 100 }

// Even the connection that registered a source cannot make one Publish
// skip more than MaxSeqJump numbers past the source's highest: the leader
// answers an Error saying where the source may go on, and proposes
// nothing; a gap up to the bound is taken. On the code before the bound,
// every one of these was stored, the last using the source up.
func TestPublishFarPastTheHighestIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, smallJump)
	leader := c.WaitLeader(1, 30*time.Second)
	cl := dial(t, clientAddr(c, leader.Name()))
	if r, ok := cl.call(&wire.Register{ReqID: 1, Source: "s", Session: "raw"}).(*wire.Registered); !ok {
		t.Fatalf("register: %#v", r)
	}
	// Each Ack says how far the source is held afterwards, so the one after
	// a refusal shows that nothing of it was stored.
	steps := []struct {
		first   uint64
		n       int
		refused bool
		high    uint64 // the source's highest afterwards
	}{
		{1, 3, false, 3},
		{104, 1, false, 104},          // a gap of 100: taken
		{206, 1, true, 104},           // a gap of 101
		{wire.MaxSeq, 1, true, 104},   // the ceiling
		{1 << 40, 2, true, 104},       // far ahead
		{105, 2, false, 106},          // the next ones
		{50, 1, false, 106},           // into the gap: a repair's or a resend's
		{106 + 101, 1, false, 207},    // a gap of 100 again
		{207 + 102, 3, true, 207},     // and of 101 again
		{207 + 101, 1, false, 308},    // 100
		{wire.MaxSeq, 1, true, 308},   // never the ceiling
		{308 + 1, 1, false, 309},      // the owner goes on
		{309 + 101 + 1, 1, true, 309}, // nor past the bound on a connection that went on
	}
	for i, st := range steps {
		reqID := uint64(10 + i)
		got := cl.call(&wire.Publish{ReqID: reqID, Source: "s", FirstSeq: st.first, Payloads: make([][]byte, st.n)})
		if st.refused {
			e, ok := got.(*wire.Error)
			if !ok || e.Code != wire.CodeBadRequest || e.ReqID != reqID || !strings.Contains(e.Message, "MaxSeqJump") {
				t.Fatalf("a Publish of %d from %d: %#v, want an Error %s naming MaxSeqJump", st.n, st.first, got, wire.CodeBadRequest)
			}
		} else if a, ok := got.(*wire.Ack); !ok || a.HighSeq != st.high {
			t.Fatalf("a Publish of %d from %d: %#v, want an Ack with HighSeq %d", st.n, st.first, got, st.high)
		}
	}
	// A new connection of the same session (a publisher that reconnected)
	// resends below the highest, and goes on from it.
	again := dial(t, clientAddr(c, leader.Name()))
	if r, ok := again.call(&wire.Register{ReqID: 1, Source: "s", Session: "raw"}).(*wire.Registered); !ok {
		t.Fatalf("register again: %#v", r)
	}
	for i, first := range []uint64{60, 309, 310} {
		if a, ok := again.call(&wire.Publish{ReqID: uint64(40 + i), Source: "s", FirstSeq: first, Payloads: make([][]byte, 1)}).(*wire.Ack); !ok {
			t.Fatalf("a Publish from %d on a new connection: %#v, want an Ack", first, a)
		}
	}
}

// A group that lags far behind another (down while the other took many
// messages) takes a restarted publisher's first frames, though they skip
// more than MaxSeqJump past what it holds, once its repair has seen how far
// the other group holds: the bound is what the deployment holds, not what
// one group does. Repair is throttled here so that it copies next to
// nothing meanwhile (a message a second), and a pass that began while group
// 1 held less learns its highest from the copy's answers.
func TestALaggingGroupTakesWhatAnotherGroupExplains(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) {
		smallJump(cfg)
		cfg.RepairInterval = 200 * time.Millisecond
		cfg.RepairBatchCount, cfg.RepairBytesPerSecond = 1, 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	payloads := make([][]byte, 300)
	for i := range payloads {
		payloads[i] = []byte("x")
	}
	if err := c.PublishDirect(ctx, 1, "lag", 1, payloads[:100]); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(2, 30*time.Second)
	// Group 2's repair pass is under way, copying what group 1 held then.
	c.Eventually(10*time.Second, "group 2 starts copying", func() bool {
		info, ok, _ := leader.Repository().Source("lag")
		return ok && info.Count > 0
	})
	for first := 101; first <= 300; first += 100 { // in steps the bound allows
		if err := c.PublishDirect(ctx, 1, "lag", uint64(first), payloads[first-1:first+99]); err != nil {
			t.Fatal(err)
		}
	}
	cl := dial(t, clientAddr(c, leader.Name()))
	if r, ok := cl.call(&wire.Register{ReqID: 1, Source: "lag", Session: "restarted"}).(*wire.Registered); !ok {
		t.Fatalf("register with group 2: %#v", r)
	}
	var refusals int
	c.Eventually(10*time.Second, "group 2 takes 301 once its repair saw group 1", func() bool {
		switch got := cl.call(&wire.Publish{ReqID: 2, Source: "lag", FirstSeq: 301, Payloads: [][]byte{[]byte("next")}}).(type) {
		case *wire.Ack:
			return true
		case *wire.Error:
			refusals++
			return false
		default:
			t.Fatalf("a Publish at 301: %#v", got)
		}
		return false
	})
	if got, ok := cl.call(&wire.Publish{ReqID: 3, Source: "lag", FirstSeq: 301 + 102, Payloads: [][]byte{[]byte("far")}}).(*wire.Error); !ok || got.Code != wire.CodeBadRequest {
		t.Fatalf("a Publish at 403 in group 2: %#v, want an Error %s", got, wire.CodeBadRequest)
	}
	info, _, _ := leader.Repository().Source("lag")
	t.Logf("group 2 took 301 after %d refusals; it holds %d messages now (301, and what its throttled repair copied of group 1's 300)", refusals, info.Count)
}
