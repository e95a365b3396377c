package receiver_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/receiver"
)

func publish(t *testing.T, c *clustertest.Cluster, source string, n int) uint64 {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.RegisterTimeout = source, c.Addrs(), time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		seq := p.FirstSeq() + uint64(i)
		if _, err := p.Send(ctx, []byte(fmt.Sprint(seq))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return p.FirstSeq()
}

func read(t *testing.T, c *clustertest.Cluster, source string, group int, from, to uint64) ([]uint64, error) {
	t.Helper()
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group = source, c.Addrs(), group
	cfg.FetchCount = 7 // many round trips, limits exercised
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seqs []uint64
	err = r.Read(ctx, from, to, func(m receiver.Message) error {
		if string(m.Payload) != fmt.Sprint(m.Seq) {
			return fmt.Errorf("seq %d carries %q", m.Seq, m.Payload)
		}
		seqs = append(seqs, m.Seq)
		return nil
	})
	return seqs, err
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// Group 2 misses messages 1-100 (it was down and the publisher that sent
// them is gone); group 1 has everything. A merged read fills group 2's hole
// from group 1; a read of group 2 alone names the hole.
func TestReadMergesGroupsAndNamesMissingRanges(t *testing.T) {
	c := clustertest.Start(t, 2, nil)
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	if first := publish(t, c, "s", 100); first != 1 {
		t.Fatalf("first seq %d", first)
	}
	for _, m := range c.Members(2) {
		c.StartStore(m.Name)
	}
	c.WaitLeader(2, 30*time.Second)
	if first := publish(t, c, "s", 50); first != 101 {
		t.Fatalf("second publisher resumed at %d, want 101", first)
	}

	got, err := read(t, c, "s", 0, 1, 150)
	if err != nil || !reflect.DeepEqual(got, seqRange(1, 150)) {
		t.Fatalf("merged read: %v, %v", len(got), err)
	}
	got, err = read(t, c, "s", 2, 1, 150)
	var me *receiver.MissingError
	if !errors.As(err, &me) || !reflect.DeepEqual(me.Ranges, []receiver.Range{{From: 1, To: 100}}) {
		t.Fatalf("group 2 alone: err %v, want missing 1-100", err)
	}
	if !reflect.DeepEqual(got, seqRange(101, 150)) {
		t.Fatalf("group 2 alone delivered %d messages, want 101..150", len(got))
	}
	// Past the end: named as missing too.
	if _, err := read(t, c, "s", 0, 149, 155); !errors.As(err, &me) || me.Ranges[0] != (receiver.Range{From: 151, To: 155}) {
		t.Fatalf("read past the end: %v", err)
	}
}

func TestFollowSeesNewMessages(t *testing.T) {
	c := clustertest.Start(t, 2, nil)
	publish(t, c, "f", 10)
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.PollInterval = "f", c.Addrs(), 20*time.Millisecond
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan uint64, 100)
	go r.Follow(ctx, 1, func(m receiver.Message) error { got <- m.Seq; return nil }, nil)
	publish(t, c, "f", 15)
	for want := uint64(1); want <= 25; want++ {
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("follow delivered %d, want %d", s, want)
			}
		case <-ctx.Done():
			t.Fatalf("follow stopped at %d", want)
		}
	}
}
