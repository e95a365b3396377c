package receiver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"umstore/receiver"
	"umstore/wire"
)

// fakeStore is a one-store group that serves a fixed set of messages to
// Fetch and Subscribe. It may lie: the payloads of the sequence numbers in
// damage are served changed, with the checksum of the original. Without
// crcs it serves no checksum at all, as a store older than checksums.
type fakeStore struct {
	ln     net.Listener
	high   uint64
	damage map[uint64]bool // served damaged
	noCRC  bool
	once   bool // each damaged message is served damaged once, then intact

	mu sync.Mutex
}

func fakePayload(seq uint64) []byte { return []byte(fmt.Sprintf("message %d", seq)) }

func startFakeStore(t *testing.T, high uint64, noCRC bool, damage ...uint64) *fakeStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeStore{ln: ln, high: high, noCRC: noCRC, damage: map[uint64]bool{}}
	for _, d := range damage {
		s.damage[d] = true
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(nc) }()
		}
	}()
	return s
}

func (s *fakeStore) addr() string { return s.ln.Addr().String() }

// msgs returns the messages in [from, to], at most max (0: all).
func (s *fakeStore) msgs(from, to uint64, max int) []wire.Msg {
	var out []wire.Msg
	for seq := max64(from, 1); seq <= min(to, s.high) && (max <= 0 || len(out) < max); seq++ {
		p := fakePayload(seq)
		m := wire.Msg{Seq: seq, Payload: p}
		if !s.noCRC {
			m.CRC = wire.Checksum(p)
		}
		s.mu.Lock()
		if s.damage[seq] {
			m.Payload = []byte(fmt.Sprintf("messagE %d", seq))
			if s.once {
				delete(s.damage, seq)
			}
		}
		s.mu.Unlock()
		out = append(out, m)
	}
	return out
}

func max64(a, b uint64) uint64 { return max(a, b) }

func (s *fakeStore) serve(nc net.Conn) {
	defer nc.Close()
	c := wire.NewConn(nc, 0)
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: s.addr(), Group: 1}, ""); err != nil {
		return
	}
	for {
		m, err := c.Read()
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *wire.Fetch:
			rep := &wire.FetchReply{ReqID: m.ReqID, Source: m.Source, Known: true, HighSeq: s.high, LowSeq: 1, Through: m.To}
			if m.From <= s.high {
				rep.Msgs = s.msgs(m.From, m.To, m.MaxCount)
				if n := len(rep.Msgs); n > 0 && rep.Msgs[n-1].Seq < min(m.To, s.high) {
					rep.Through = rep.Msgs[n-1].Seq
				}
			}
			if err := c.Send(rep); err != nil {
				return
			}
		case *wire.Subscribe:
			go func() {
				d := &wire.Deliver{ReqID: m.ReqID, Source: m.Source, Through: s.high, HighSeq: s.high, LowSeq: 1, Msgs: s.msgs(m.From, s.high, 0)}
				for {
					if err := c.Send(d); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
					d = &wire.Deliver{ReqID: m.ReqID, Source: m.Source, Through: s.high, HighSeq: s.high, LowSeq: 1}
				}
			}()
		}
	}
}

func newFakeReceiver(t *testing.T, group int, stores ...*fakeStore) *receiver.Receiver {
	t.Helper()
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Group = "s", group
	cfg.FetchCount = 4
	cfg.Logger = slog.New(slog.DiscardHandler)
	for _, s := range stores {
		cfg.Groups = append(cfg.Groups, []string{s.addr()})
	}
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// The receiver never hands the application a payload that does not match
// the checksum its store sent: it takes the message from another group,
// or, when no group has it intact, reports it as not held. A store that
// sends no checksum (older than checksums) is believed.
func TestReceiverRefusesPayloadsThatFailTheirChecksum(t *testing.T) {
	t.Parallel()
	const high = 10
	tests := []struct {
		name        string
		stores      func(t *testing.T) []*fakeStore
		group       int // 0: every group
		wantMissing []receiver.Range
		wantDamaged bool
	}{
		{"a lying group, an honest one", func(t *testing.T) []*fakeStore {
			return []*fakeStore{startFakeStore(t, high, false, 3, 4, 9), startFakeStore(t, high, false)}
		}, 0, nil, true},
		{"the lying group alone", func(t *testing.T) []*fakeStore {
			return []*fakeStore{startFakeStore(t, high, false, 3, 4, 9), startFakeStore(t, high, false)}
		}, 1, []receiver.Range{{From: 3, To: 4}, {From: 9, To: 9}}, true},
		{"both groups lie about the same message", func(t *testing.T) []*fakeStore {
			return []*fakeStore{startFakeStore(t, high, false, 5), startFakeStore(t, high, false, 5, 6)}
		}, 0, []receiver.Range{{From: 5, To: 5}}, true},
		{"a store without checksums", func(t *testing.T) []*fakeStore {
			return []*fakeStore{startFakeStore(t, high, true)}
		}, 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := tt.stores(t)
			missing := map[uint64]bool{}
			for _, rg := range tt.wantMissing {
				for s := rg.From; s <= rg.To; s++ {
					missing[s] = true
				}
			}
			check := func(t *testing.T, got map[uint64]string) {
				t.Helper()
				for seq := uint64(1); seq <= high; seq++ {
					p, ok := got[seq]
					if missing[seq] {
						if ok {
							t.Fatalf("message %d, intact nowhere, was delivered as %q", seq, p)
						}
						continue
					}
					if !ok || p != string(fakePayload(seq)) {
						t.Fatalf("message %d delivered as %q (delivered: %v), want %q", seq, p, ok, fakePayload(seq))
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			t.Run("Read", func(t *testing.T) {
				r := newFakeReceiver(t, tt.group, stores...)
				got := map[uint64]string{}
				err := r.Read(ctx, 1, high, func(m receiver.Message) error {
					got[m.Seq] = string(m.Payload)
					return nil
				})
				var me *receiver.MissingError
				switch {
				case tt.wantMissing == nil && err != nil:
					t.Fatalf("Read: %v", err)
				case tt.wantMissing != nil && (!errors.As(err, &me) || !reflect.DeepEqual(me.Ranges, tt.wantMissing)):
					t.Fatalf("Read: %v, want %v reported missing", err, tt.wantMissing)
				}
				check(t, got)
				if (r.Damaged() > 0) != tt.wantDamaged {
					t.Fatalf("Damaged() = %d, want damage counted: %v", r.Damaged(), tt.wantDamaged)
				}
			})

			t.Run("Follow", func(t *testing.T) {
				r := newFakeReceiver(t, tt.group, stores...)
				fctx, fcancel := context.WithCancel(ctx)
				defer fcancel()
				got := map[uint64]string{}
				var lost []receiver.Range
				done := func() {
					if _, ok := got[high]; ok || missing[high] && len(lost) > 0 {
						fcancel()
					}
				}
				err := r.Follow(fctx, 1, func(m receiver.Message) error {
					if _, dup := got[m.Seq]; dup {
						return fmt.Errorf("message %d delivered twice", m.Seq)
					}
					got[m.Seq] = string(m.Payload)
					done()
					return nil
				}, func(rg receiver.Range) {
					lost = append(lost, rg)
					done()
				})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Follow: %v", err)
				}
				check(t, got)
				if !reflect.DeepEqual(lost, tt.wantMissing) {
					t.Fatalf("Follow reported %v missing, want %v", lost, tt.wantMissing)
				}
			})
		})
	}
}

// A payload damaged on its way once arrives intact when asked again: Read
// asks the group again, and a subscription's damaged message is fetched
// again from the same group, before a message is reported missing.
func TestDamagedOnceIsAskedForAgain(t *testing.T) {
	t.Parallel()
	for _, follow := range []bool{false, true} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			s := startFakeStore(t, 5, false, 2, 5)
			s.once = true
			r := newFakeReceiver(t, 0, s)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var lost []receiver.Range
			got := map[uint64]string{}
			deliver := func(m receiver.Message) error {
				got[m.Seq] = string(m.Payload)
				if m.Seq == 5 && follow {
					cancel()
				}
				return nil
			}
			var err error
			if follow {
				err = r.Follow(ctx, 1, deliver, func(rg receiver.Range) { lost = append(lost, rg) })
				if errors.Is(err, context.Canceled) {
					err = nil
				}
			} else {
				err = r.Read(ctx, 1, 5, deliver)
			}
			if err != nil || len(lost) > 0 {
				t.Fatalf("err %v, lost %v; want every message delivered", err, lost)
			}
			for seq := uint64(1); seq <= 5; seq++ {
				if got[seq] != string(fakePayload(seq)) {
					t.Fatalf("message %d delivered as %q", seq, got[seq])
				}
			}
			if r.Damaged() != 2 {
				t.Fatalf("Damaged() = %d, want 2", r.Damaged())
			}
		})
	}
}
