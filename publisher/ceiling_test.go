package publisher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
	"umstore/wire"
)

// A source that reaches wire.MaxSeq has no sequence number left: Send
// refuses the message past it, and a new publisher's registration fails,
// both with ErrSequenceExhausted; nothing wraps around to 0.
func TestSendStopsAtTheCeiling(t *testing.T) {
	t.Parallel()
	// The stores let no Publish skip far past a source's highest
	// (MaxSeqJump): this one may, to start a source near the ceiling.
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.ClientLimits.MaxSeqJump = wire.MaxSeq })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An earlier publisher got to two below the ceiling.
	if err := c.PublishDirect(ctx, 1, "s", wire.MaxSeq-2, [][]byte{[]byte("old")}); err != nil {
		t.Fatal(err)
	}
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "s", c.Addrs()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.FirstSeq(); got != wire.MaxSeq-1 {
		t.Fatalf("resumed at %d, want %d", got, uint64(wire.MaxSeq-1))
	}
	for _, want := range []uint64{wire.MaxSeq - 1, wire.MaxSeq} {
		if seq, err := p.Send(ctx, []byte("last ones")); err != nil || seq != want {
			t.Fatalf("send: %d, %v; want %d", seq, err, want)
		}
	}
	seq, err := p.Send(ctx, []byte("one too many"))
	if !errors.Is(err, publisher.ErrSequenceExhausted) || seq != 0 {
		t.Fatalf("send past the ceiling: %d, %v; want ErrSequenceExhausted", seq, err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Sent != 2 || st.Stable != wire.MaxSeq {
		t.Fatalf("stats %+v, want 2 sent and stable through the ceiling", st)
	}
	p.Close()

	next, err := publisher.New(ctx, cfg)
	if err == nil {
		next.Close()
		t.Fatalf("a publisher registered on a source held up to the ceiling, resuming at %d", next.FirstSeq())
	}
	if !errors.Is(err, publisher.ErrSequenceExhausted) {
		t.Fatalf("registration on an exhausted source: %v, want ErrSequenceExhausted", err)
	}
}
