package publisher_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/receiver"
	"umstore/wire"
)

// A payload no store could serve back is refused by Send with ErrTooLarge
// before it takes a sequence number, and the messages after it flow; a
// payload of exactly wire.MaxPayload, even right behind a small one, is
// stable and reads back whole.
func TestSendRefusesPayloadsTooLargeToServeBack(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, clustertest.PatientRaft)
	// A store answers a connection's frames in order, so a Ping sent behind
	// a 16 MiB Publish is answered only once that Publish commits; under the
	// race detector that takes longer than the default AckTimeout, and every
	// resend would add another 16 MiB proposal behind it. This test is about
	// sizes, not stall detection: give the group time.
	p := newPublisher(t, c, "big", func(cfg *publisher.Config) { cfg.AckTimeout = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	want := map[uint64][]byte{}
	send := func(payload []byte) {
		t.Helper()
		seq, err := p.Send(ctx, payload)
		if err != nil {
			t.Fatalf("Send of %d bytes: %v", len(payload), err)
		}
		want[seq] = payload
	}
	send([]byte("first"))
	for _, size := range []int{20 << 20, wire.MaxPayload + 1} {
		seq, err := p.Send(ctx, make([]byte, size))
		if !errors.Is(err, publisher.ErrTooLarge) || seq != 0 {
			t.Fatalf("Send of %d bytes = %d, %v; want ErrTooLarge and no sequence number", size, seq, err)
		}
	}
	send([]byte("small, just before the largest"))
	send(bytes.Repeat([]byte("L"), wire.MaxPayload))
	send([]byte("last"))
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("the messages after a refused payload are not stable: %v", err)
	}
	if len(want) != 4 || want[4] == nil {
		t.Fatalf("sequence numbers %v: the refused payloads must not take any", len(want))
	}
	// An Ack comes before the leader's repository commits (ARCHITECTURE.md).
	c.Eventually(30*time.Second, "the leader's repository holds all four", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, ok, err := l.Repository().Source("big")
		return err == nil && ok && info.HighSeq == 4
	})

	rcfg := receiver.DefaultConfig()
	rcfg.Source, rcfg.Groups = "big", c.Addrs()
	r, err := receiver.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	err = r.Read(ctx, 1, 4, func(m receiver.Message) error {
		if !bytes.Equal(m.Payload, want[m.Seq]) {
			t.Errorf("seq %d: read back %d bytes, want %d", m.Seq, len(m.Payload), len(want[m.Seq]))
		}
		n++
		return nil
	})
	if err != nil || n != 4 {
		t.Fatalf("read back %d of 4 messages: %v", n, err)
	}
}
