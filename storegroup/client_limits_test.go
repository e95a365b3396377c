package storegroup_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/receiver"
	"umstore/storegroup"
	"umstore/wire"
)

// dialFrom opens a handshaken client connection to addr leaving from ip.
func dialFrom(t *testing.T, ip, addr string) (*wire.Conn, error) {
	t.Helper()
	d := &wire.Dialer{Client: "test", LocalIP: net.ParseIP(ip), Timeout: 5 * time.Second}
	c, _, err := d.Dial(context.Background(), addr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// A store counts its client connections per remote address and in all:
// one over a limit is refused at once with an Error saying which limit,
// counted in /metrics; a freed slot is taken again; the group's other
// stores are not affected.
func TestClientConnectionLimits(t *testing.T) {
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.ClientLimits.MaxConns = 6
		cfg.ClientLimits.MaxConnsPerAddr = 4
	})
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	refused := func(reason string) float64 {
		return metricValue(t, reg, "umstore_client_connections_refused_total", map[string]string{"store": leader.Name(), "reason": reason})
	}
	served := func(conn *wire.Conn) bool {
		_ = conn.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		if err := conn.Send(&wire.Probe{ReqID: 1}); err != nil {
			return false
		}
		_, err := conn.Read()
		return err == nil
	}
	wantRefusal := func(ip, mentions string) {
		t.Helper()
		_, err := dialFrom(t, ip, addr)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !strings.Contains(we.Message, mentions) {
			t.Fatalf("a connection from %s over a limit: got %v, want an %q Error mentioning %q", ip, err, wire.CodeUnavailable, mentions)
		}
	}

	var first []*wire.Conn
	for i := 0; i < 4; i++ {
		conn, err := dialFrom(t, "127.0.0.1", addr)
		if err != nil || !served(conn) {
			t.Fatalf("connection %d from 127.0.0.1, within the limits: %v", i+1, err)
		}
		first = append(first, conn)
	}
	wantRefusal("127.0.0.1", "MaxConnsPerAddr")
	for i := 0; i < 2; i++ {
		if conn, err := dialFrom(t, "127.0.0.5", addr); err != nil || !served(conn) {
			t.Fatalf("connection %d from 127.0.0.5, within the limits: %v", i+1, err)
		}
	}
	wantRefusal("127.0.0.6", "MaxConns")
	if a, s := refused("address_limit"), refused("store_limit"); a != 1 || s != 1 {
		t.Fatalf("refused connections counted: address_limit %v, store_limit %v; want 1 and 1", a, s)
	}
	for _, m := range c.Members(1) {
		if m.Name != leader.Name() {
			if conn, err := dialFrom(t, "127.0.0.6", m.ClientAddr); err != nil || !served(conn) {
				t.Fatalf("follower %s refused a client because the leader is full: %v", m.Name, err)
			}
		}
	}
	for _, conn := range first {
		conn.Close()
	}
	c.Eventually(10*time.Second, "closed connections free their slots", func() bool {
		conn, err := dialFrom(t, "127.0.0.6", addr)
		return err == nil && served(conn)
	})
}

// limitsTune gives the stores short time bounds, so the tests see them met.
func limitsTune(idle, frame time.Duration) func(*storegroup.Config) {
	return func(cfg *storegroup.Config) {
		cfg.SourceActivityTimeout = idle / 2 // the idle bound is never below twice this
		cfg.ClientLimits.IdleTimeout = idle
		cfg.ClientLimits.FrameTimeout = frame
	}
}

// closedWithin waits up to limit for the store to close conn, and says how
// long that took.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	var buf [64]byte
	for {
		_, err := conn.Read(buf[:])
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the store kept the connection for more than %v", limit)
		}
		return time.Since(start)
	}
}

// After Hello, a connection that sends nothing is closed after the idle
// bound, and one that starts a frame must finish it within the frame bound:
// a client sending a byte a second is cut.
func TestIdleAndSlowClientsAreCut(t *testing.T) {
	testmain.Slow(t)
	const idle, frame = 2 * time.Second, 3 * time.Second
	c := clustertest.Start(t, 1, limitsTune(idle, frame))
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	closed := func(reason string) float64 {
		return metricValue(t, reg, "umstore_client_connections_closed_total", map[string]string{"store": leader.Name(), "reason": reason})
	}

	t.Run("idle", func(t *testing.T) {
		conn, err := dialFrom(t, "127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		if took := closedWithin(t, conn.NetConn(), idle+3*time.Second); took < idle-500*time.Millisecond {
			t.Fatalf("an idle connection was closed after %v, before the idle bound of %v", took, idle)
		}
		c.Eventually(5*time.Second, "the idle close is counted", func() bool { return closed("idle") == 1 })
	})
	t.Run("a byte a second", func(t *testing.T) {
		conn, err := dialFrom(t, "127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw := conn.NetConn()
		// A Probe frame that would be whole after 6 bytes: 6 seconds.
		probe := mustEncode(t, &wire.Probe{ReqID: 1})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range probe {
				if _, err := raw.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		}()
		took := closedWithin(t, raw, frame+3*time.Second)
		wg.Wait()
		if took < frame-500*time.Millisecond {
			t.Fatalf("the slow client was cut after %v, before the frame bound of %v", took, frame)
		}
		c.Eventually(5*time.Second, "the slow frame is counted", func() bool { return closed("slow_frame") == 1 })
	})
}

// Every legitimate client keeps working under short time bounds: a
// publisher (its keep-alives), a receiver following a source (the store
// pushes; the receiver says nothing), a pooled request connection (closed
// when idle, reopened on the next call without the caller noticing).
func TestLegitimateClientsOutliveTheTimeBounds(t *testing.T) {
	testmain.Slow(t)
	const idle = 1 * time.Second
	c := clustertest.Start(t, 1, limitsTune(idle, 2*time.Second))
	leader := c.WaitLeader(1, 30*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	idleClosed := func() float64 {
		return metricValue(t, reg, "umstore_client_connections_closed_total", map[string]string{"store": leader.Name(), "reason": "idle"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pcfg := publisher.DefaultConfig()
	pcfg.Source, pcfg.Groups, pcfg.KeepAliveInterval = "legit", c.Addrs(), idle/4
	pub, err := publisher.New(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	rcfg := receiver.DefaultConfig()
	rcfg.Source, rcfg.Groups = "legit", c.Addrs()
	rcv, err := receiver.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	got := make(chan uint64, 16)
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	go rcv.Follow(followCtx, 1, func(m receiver.Message) error { got <- m.Seq; return nil }, nil)
	pool := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "test", Timeout: 5 * time.Second})
	defer pool.Close()

	publishAndSee := func(payload string) {
		t.Helper()
		seq, err := pub.Send(ctx, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			if s != seq {
				t.Fatalf("the receiver got %d, want %d", s, seq)
			}
		case <-ctx.Done():
			t.Fatalf("the receiver never got %d", seq)
		}
	}
	publishAndSee("before")
	if _, err := pool.Sources(ctx); err != nil {
		t.Fatal(err)
	}
	before := idleClosed()
	time.Sleep(4 * idle) // what is measured is the passing of time itself
	publishAndSee("after")
	if _, err := pool.Sources(ctx); err != nil {
		t.Fatalf("a pooled connection closed for idleness was not reopened: %v", err)
	}
	// Only the pooled connection was idle; the publisher's and the
	// subscription's were kept.
	if n := idleClosed() - before; n != 1 {
		t.Fatalf("%v connections closed as idle while the clients waited, want 1 (the pooled one)", n)
	}
	if st := pub.Stats(); st.Reconnects != 0 {
		t.Fatalf("the publisher reconnected %d times", st.Reconnects)
	}
}

// A store keeps no payload it could not serve back: a Publish carrying one
// larger than wire.MaxPayload is refused with a too-large Error, nothing is
// stored and the connection goes on; a payload of exactly wire.MaxPayload
// is acknowledged and fetched back whole, even by a Fetch whose byte
// budget is smaller than it.
func TestStoreRefusesPayloadsItCouldNotServeBack(t *testing.T) {
	testmain.Slow(t)
	c := clustertest.Start(t, 1, clustertest.PatientRaft)
	leader := c.WaitLeader(1, 30*time.Second)
	lc := dial(t, clientAddr(c, leader.Name()))
	if _, ok := lc.call(&wire.Register{ReqID: 1, Source: "big", Session: "s"}).(*wire.Registered); !ok {
		t.Fatal("register failed")
	}
	over := &wire.Publish{ReqID: 2, Source: "big", FirstSeq: 1, Payloads: [][]byte{make([]byte, wire.MaxPayload+1)}}
	if e, ok := lc.call(over).(*wire.Error); !ok || e.Code != wire.CodeTooLarge || e.ReqID != 2 {
		t.Fatalf("a payload over wire.MaxPayload: got %#v, want a %s Error for request 2", e, wire.CodeTooLarge)
	}
	if rep, ok := lc.call(&wire.Fetch{ReqID: 3, Source: "big", From: 1, To: 10}).(*wire.FetchReply); !ok || rep.HighSeq != 0 || len(rep.Msgs) != 0 {
		t.Fatalf("after the refusal: fetch %#v, want nothing stored", rep)
	}
	exact := bytes.Repeat([]byte("x"), wire.MaxPayload)
	if ack, ok := lc.call(&wire.Publish{ReqID: 4, Source: "big", FirstSeq: 1, Payloads: [][]byte{exact}}).(*wire.Ack); !ok || ack.LastSeq != 1 {
		t.Fatalf("a payload of exactly wire.MaxPayload: got %#v, want an Ack", ack)
	}
	c.Eventually(10*time.Second, "the leader's repository holds the message", func() bool {
		info, ok, err := leader.Repository().Source("big")
		return err == nil && ok && info.HighSeq == 1
	})
	rep, ok := lc.call(&wire.Fetch{ReqID: 5, Source: "big", From: 1, To: 10, MaxBytes: 1024}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 1 || !bytes.Equal(rep.Msgs[0].Payload, exact) || rep.Through < 1 {
		t.Fatalf("fetching the largest payload with a 1 KiB budget: %d messages, through %d; want it whole", len(rep.Msgs), rep.Through)
	}
}

// A reply cut short by its byte budget covers only up to its last message,
// however little it holds: with a 600 KiB message behind a small one, a
// Fetch or a subscription's Deliver must not claim the range past the small
// one (that hid held messages: "held by no reachable store group").
func TestRepliesCutByTheByteBudgetClaimOnlyWhatTheyHold(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())
	lc := dial(t, addr)
	if _, ok := lc.call(&wire.Register{ReqID: 1, Source: "cut", Session: "s"}).(*wire.Registered); !ok {
		t.Fatal("register failed")
	}
	big := bytes.Repeat([]byte("b"), 600<<10)
	if ack, ok := lc.call(&wire.Publish{ReqID: 2, Source: "cut", FirstSeq: 1, Payloads: [][]byte{[]byte("a"), big, big}}).(*wire.Ack); !ok || ack.LastSeq != 3 {
		t.Fatalf("publish: %#v", ack)
	}
	c.Eventually(10*time.Second, "the leader's repository holds 1-3", func() bool {
		info, ok, err := leader.Repository().Source("cut")
		return err == nil && ok && info.HighSeq == 3
	})
	rep, ok := lc.call(&wire.Fetch{ReqID: 3, Source: "cut", From: 1, To: 10}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 2 || rep.Through != 2 {
		t.Fatalf("fetch 1-10 with the default 1 MiB budget: %d messages through %d, want 2 through 2", len(rep.Msgs), rep.Through)
	}
	rep, ok = lc.call(&wire.Fetch{ReqID: 4, Source: "cut", From: 3, To: 10}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 1 || rep.Msgs[0].Seq != 3 || rep.Through != 10 {
		t.Fatalf("fetch 3-10: %#v", rep)
	}

	sc := dial(t, addr)
	_ = sc.c.NetConn().SetDeadline(time.Now().Add(15 * time.Second))
	if err := sc.c.Send(&wire.Subscribe{ReqID: 1, Source: "cut", From: 1}); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for len(seen) < 3 {
		m, err := sc.c.Read()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := m.(*wire.Deliver)
		if !ok {
			t.Fatalf("subscription: got %#v", m)
		}
		for _, msg := range d.Msgs {
			seen = append(seen, msg.Seq)
		}
		if len(d.Msgs) > 0 && d.Through != seen[len(seen)-1] {
			t.Fatalf("a Deliver holding up to %d claims through %d", seen[len(seen)-1], d.Through)
		}
	}
}

// A store bounds the sources and receiver names its clients register: per
// connection (MaxSourcesPerConn, MaxReceiversPerConn) and, for sources, in
// all (MaxSources). Up to a limit registrations are recorded as ever; one
// more is refused with an unavailable Error naming the limit, its value
// and what to do, and counted in /metrics; registering again what a
// connection holds is not counted twice; a closed connection gives its
// places back.
func TestClientRegistrationLimits(t *testing.T) {
	testmain.Slow(t)
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.ClientLimits.MaxSourcesPerConn = 2
		cfg.ClientLimits.MaxSources = 3
		cfg.ClientLimits.MaxReceiversPerConn = 1
	})
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	refused := func(reason string) float64 {
		return metricValue(t, reg, "umstore_client_frames_refused_total", map[string]string{"store": leader.Name(), "reason": reason})
	}
	registered := func(cl *client, m wire.Message) {
		t.Helper()
		if got, ok := cl.call(m).(*wire.Registered); !ok {
			t.Fatalf("%+v within the limits: got %#v, want Registered", m, got)
		}
	}
	overLimit := func(got wire.Message, mentions ...string) {
		t.Helper()
		e, ok := got.(*wire.Error)
		if !ok || e.Code != wire.CodeUnavailable {
			t.Fatalf("a registration over a limit: got %#v, want an %s Error", got, wire.CodeUnavailable)
		}
		for _, m := range mentions {
			if !strings.Contains(e.Message, m) {
				t.Fatalf("the refusal %q does not mention %q", e.Message, m)
			}
		}
	}

	one := dial(t, addr)
	registered(one, &wire.Register{ReqID: 1, Source: "a", Session: "one"})
	registered(one, &wire.Register{ReqID: 2, Source: "b", Session: "one"})
	registered(one, &wire.Register{ReqID: 3, Source: "a", Session: "one"}) // again: counted once
	overLimit(one.call(&wire.Register{ReqID: 4, Source: "c", Session: "one"}),
		"this connection already holds 2 sources", "MaxSourcesPerConn", "--max-sources-per-conn", "close sources you no longer use", "open another connection")
	if ack, ok := one.call(&wire.Publish{ReqID: 5, Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("1")}}).(*wire.Ack); !ok || ack.LastSeq != 1 {
		t.Fatalf("publishing a registered source after a refusal: %#v", ack)
	}

	two := dial(t, addr)
	registered(two, &wire.RegisterSource{ReqID: 1, Source: "c", Session: "two"})
	overLimit(two.call(&wire.Register{ReqID: 2, Source: "d", Session: "two"}),
		"store "+leader.Name()+" already holds 3 source registrations", "MaxSources", "--max-sources")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	pcfg := publisher.DefaultConfig()
	pcfg.Source, pcfg.Groups = "e", c.Addrs()
	// The SDK takes unavailable for a store that may serve later: it
	// retries until its context ends, and does not yet report the store's
	// words.
	if pub, err := publisher.New(ctx, pcfg); !errors.Is(err, publisher.ErrRegistration) {
		if pub != nil {
			pub.Close()
		}
		t.Fatalf("a publisher of a fourth source over MaxSources 3: %v, want %v", err, publisher.ErrRegistration)
	}
	if n := refused("source_limit"); n < 3 {
		t.Fatalf("refused registrations counted as source_limit: %v, want at least 3", n)
	}

	one.c.Close() // gives a and b back
	c.Eventually(10*time.Second, "a closed connection's sources are given back", func() bool {
		_, ok := two.call(&wire.Register{ReqID: 3, Source: "d", Session: "two"}).(*wire.Registered)
		return ok
	})

	rcv := dial(t, addr)
	if _, ok := rcv.call(&wire.RegisterReceiver{ReqID: 1, Source: "c", Receiver: "r1", Session: "x"}).(*wire.ReceiverRegistered); !ok {
		t.Fatal("a receiver within MaxReceiversPerConn was refused")
	}
	overLimit(rcv.call(&wire.RegisterReceiver{ReqID: 2, Source: "c", Receiver: "r2", Session: "x"}),
		"this connection already holds 1 receiver names", "MaxReceiversPerConn", "--max-receivers-per-conn")
	if n := refused("receiver_limit"); n != 1 {
		t.Fatalf("refused receivers counted as receiver_limit: %v, want 1", n)
	}
}
