package publisher_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/wire"
)

// eventLog collects a publisher's events.
type eventLog struct {
	mu       sync.Mutex
	flight   []publisher.FlightEvent
	group    []publisher.GroupStable
	unstable []publisher.Unstable
	stable   []uint64 // last of each OnStable range
}

func (l *eventLog) tune(cfg *publisher.Config) {
	cfg.OnFlightSize = func(e publisher.FlightEvent) { l.mu.Lock(); l.flight = append(l.flight, e); l.mu.Unlock() }
	cfg.OnGroupStable = func(e publisher.GroupStable) { l.mu.Lock(); l.group = append(l.group, e); l.mu.Unlock() }
	cfg.OnUnstable = func(e publisher.Unstable) { l.mu.Lock(); l.unstable = append(l.unstable, e); l.mu.Unlock() }
	cfg.OnStable = func(_, last uint64) { l.mu.Lock(); l.stable = append(l.stable, last); l.mu.Unlock() }
}

func (l *eventLog) snapshot() eventLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventLog{flight: slices.Clone(l.flight), group: slices.Clone(l.group), unstable: slices.Clone(l.unstable), stable: slices.Clone(l.stable)}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With FlightNotify a full flight does not stop Send (UM's "notify"): the
// send succeeds, OnFlightSize hears FlightOver once, and FlightUnder once
// the group is back and the messages are stable. Before, a full flight
// could only block or fail.
func TestFlightNotify(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	var log eventLog
	p := newPublisher(t, c, "notify", func(cfg *publisher.Config) {
		cfg.FlightSize = 3
		cfg.Flight = publisher.FlightNotify
		log.tune(cfg)
	})
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := uint64(1); i <= 10; i++ {
		short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.Send(short, payload(i))
		cancelShort()
		if err != nil {
			t.Fatalf("Send %d with the flight full and FlightNotify: %v", i, err)
		}
	}
	eventually(t, 10*time.Second, "FlightOver", func() bool { return len(log.snapshot().flight) == 1 })
	if got := log.snapshot().flight[0]; got.State != publisher.FlightOver || got.InFlight != 4 {
		t.Fatalf("first flight event %+v, want over with 4 in flight (the send that found 3)", got)
	}
	if st := p.Stats(); st.InFlight != 10 || st.InFlightBytes != int64(len(payload(1))*9+len(payload(10))) {
		t.Fatalf("stats in flight %d (%d bytes), want 10", st.InFlight, st.InFlightBytes)
	}
	for _, m := range c.Members(1) {
		c.StartStore(m.Name)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "FlightUnder", func() bool { return len(log.snapshot().flight) == 2 })
	if got := log.snapshot().flight; got[1].State != publisher.FlightUnder || got[1].InFlight >= 3 {
		t.Fatalf("flight events %+v, want over then under", got)
	}
}

// FlightSizeBytes bounds the payload bytes in flight (UM
// ume_flight_size_bytes), whatever the count.
func TestFlightSizeBytes(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	p := newPublisher(t, c, "bytes", func(cfg *publisher.Config) {
		cfg.FlightSizeBytes = 100
		cfg.Flight = publisher.FlightRefuse
	})
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	msg := make([]byte, 30)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if _, err := p.Send(ctx, msg); err != nil {
			t.Fatalf("send %d (%d bytes in flight): %v", i, 30*(i-1), err)
		}
	}
	if _, err := p.Send(ctx, msg); !errors.Is(err, publisher.ErrFlightFull) {
		t.Fatalf("fourth 30-byte send under a 100-byte limit: %v, want ErrFlightFull", err)
	}
}

// A message still unstable after StabilityLifetime is reported once to
// OnUnstable (UM's ume_message_stability_lifetime); it stays retained, so
// it becomes stable when the group returns.
func TestStabilityLifetime(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	var log eventLog
	p := newPublisher(t, c, "lifetime", func(cfg *publisher.Config) {
		cfg.StabilityLifetime = 300 * time.Millisecond
		log.tune(cfg)
	})
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := uint64(1); i <= 5; i++ {
		if _, err := p.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "an unstable report", func() bool { return len(log.snapshot().unstable) > 0 })
	time.Sleep(time.Second) // long enough for a wrong second report of the same messages
	got := log.snapshot().unstable
	if len(got) != 1 || got[0] != (publisher.Unstable{Reason: publisher.UnstableLifetime, First: 1, Last: 5}) {
		t.Fatalf("unstable reports %+v, want one for 1-5", got)
	}
	if st := p.Stats(); st.ReportedUnstable != 5 {
		t.Fatalf("stats: %d reported unstable, want 5", st.ReportedUnstable)
	}
	for _, m := range c.Members(1) {
		c.StartStore(m.Name)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("the reported messages did not become stable once the group returned: %v", err)
	}
}

// Every group's confirmations reach OnGroupStable, in order, naming the
// store (the group's leader) that acknowledged: UM's per-store stability
// events.
func TestGroupStableEvents(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	var log eventLog
	p := newPublisher(t, c, "per-group", log.tune)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 300
	for i := uint64(1); i <= n; i++ {
		if _, err := p.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitAllGroups(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "group events up to the last message", func() bool {
		reached := map[int]uint64{}
		for _, e := range log.snapshot().group {
			reached[e.Group] = max(reached[e.Group], e.Last)
		}
		return reached[1] == n && reached[2] == n
	})
	next := map[int]uint64{1: 1, 2: 1}
	addrs := c.Addrs()
	for _, e := range log.snapshot().group {
		if e.First != next[e.Group] || e.Last < e.First {
			t.Fatalf("group %d event %d-%d, want one starting at %d", e.Group, e.First, e.Last, next[e.Group])
		}
		next[e.Group] = e.Last + 1
		if !slices.Contains(addrs[e.Group-1], e.Store) {
			t.Fatalf("group %d event names store %q, not one of %v", e.Group, e.Store, addrs[e.Group-1])
		}
	}
}

// A store that knows sequence numbers are lost answers Nak: the publisher
// reports them (UnstableLost) and takes the rest of the frame as
// confirmed. The store here is a stand-in speaking the protocol, which
// Naks whatever the test asks; storegroup's nak_test.go has real stores
// Nak what retention released.
func TestStabilityNak(t *testing.T) {
	t.Parallel()
	addr := fakeNakStore(t, wire.Range{From: 2, To: 3})
	var log eventLog
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.MaxBatch = "nak", [][]string{{addr}}, 5
	log.tune(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := uint64(1); i <= 5; i++ {
		if _, err := p.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the NAK's report", func() bool { return len(log.snapshot().unstable) > 0 })
	got := log.snapshot().unstable[0]
	if got.Reason != publisher.UnstableLost || got.Group != 1 || got.Store != addr || got.First != 2 || got.Last != 3 {
		t.Fatalf("NAK reported as %+v, want lost 2-3 in group 1 at %s", got, addr)
	}
	st := p.Stats()
	if st.Lost != 2 || st.Stable != 1 {
		t.Fatalf("stats %+v: want 2 lost, stable through 1 (2 is never confirmed)", st)
	}
}

// fakeNakStore serves one group of one store at a loopback address: it
// registers any source with nothing held and answers every Publish with a
// Nak naming lost (clipped to the frame).
func fakeNakStore(t *testing.T, lost wire.Range) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				c := wire.NewConn(nc, 0)
				if _, err := wire.ServerHandshake(c, wire.Welcome{Store: "FAKE", Group: 1}, ""); err != nil {
					return
				}
				for {
					m, err := c.Read()
					if err != nil {
						return
					}
					switch m := m.(type) {
					case *wire.Ping:
						_ = c.Send(&wire.Pong{ReqID: m.ReqID, Store: "FAKE", Group: 1, Groups: 1, Leading: true})
					case *wire.Register:
						_ = c.Send(&wire.Registered{ReqID: m.ReqID, Source: m.Source, Group: 1, GroupID: "fake"})
					case *wire.Publish:
						last := m.FirstSeq + uint64(len(m.Payloads)) - 1
						nak := &wire.Nak{ReqID: m.ReqID, Source: m.Source, FirstSeq: m.FirstSeq, LastSeq: last, HighSeq: last}
						if from, to := max(lost.From, m.FirstSeq), min(lost.To, last); from <= to {
							nak.Lost = []wire.Range{{From: from, To: to}}
						}
						_ = c.Send(nak)
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A static RegID is one registration: a second publisher with the same
// RegID takes the source at once (a restarted publisher resumes), while
// one with another RegID finds it busy.
func TestStaticRegIDIsTheSameRegistration(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	first := newPublisher(t, c, "regid", func(cfg *publisher.Config) { cfg.RegID = 1000 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := uint64(1); i <= 10; i++ {
		if _, err := first.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Session(), "regid:1000#") {
		t.Fatalf("session %q, want the identity regid:1000 with an epoch", first.Session())
	}

	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.RegID, cfg.RegisterTimeout = "regid", c.Addrs(), 1001, 500*time.Millisecond
	if _, err := publisher.New(short, cfg); !errors.Is(err, publisher.ErrSourceBusy) {
		t.Fatalf("another RegID while the first publisher lives: %v, want ErrSourceBusy", err)
	}

	cfg.RegID = 1000
	again, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("the same RegID while the first publisher lives (a restart): %v", err)
	}
	defer again.Close()
	if got := again.FirstSeq(); got != 11 {
		t.Fatalf("the same RegID resumed at %d, want 11", got)
	}
	if _, err := again.Send(ctx, payload(11)); err != nil {
		t.Fatal(err)
	}
	if err := again.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
