package storegroup_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// pacedLimit is the paced tests' retention limit, in messages.
const pacedLimit = 100

// pacedCluster runs groups whose stores allow receiver-paced persistence,
// keep at most pacedLimit messages per source, check retention often and
// expire silent receivers after two seconds.
func pacedCluster(t *testing.T, groups int) *clustertest.Cluster {
	return clustertest.Start(t, groups, func(c *storegroup.Config) {
		c.AllowReceiverPacedPersistence = true
		c.RetentionMaxMessages = pacedLimit
		c.RetentionMaxBytes = 0
		c.RetentionInterval = 100 * time.Millisecond
		c.ReceiverActivityTimeout = 2 * time.Second
	})
}

func pacedPublisher(t *testing.T, ctx context.Context, c *clustertest.Cluster, pacing publisher.Pacing) *publisher.Publisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.ReceiverPaced = "paced", c.Addrs(), pacing
	cfg.FlightSize = 20
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func pacedReceiver(t *testing.T, c *clustertest.Cluster, name string) *receiver.Receiver {
	t.Helper()
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Name = "paced", c.Addrs(), name
	cfg.Paced, cfg.ExplicitAck = true, true
	cfg.KeepAliveInterval = 300 * time.Millisecond
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// sendInBackground sends n messages, counting them in sent.
func sendInBackground(ctx context.Context, p *publisher.Publisher, n int, sent *atomic.Uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := p.Send(ctx, []byte(fmt.Sprint(i))); err != nil {
				done <- err
				return
			}
			sent.Add(1)
		}
		done <- p.Flush(ctx)
	}()
	return done
}

// trimmedThrough is the highest TrimmedThrough of the source among every
// store of every group: how far any store released it.
func trimmedThrough(c *clustertest.Cluster, groups int) uint64 {
	var most uint64
	for g := 1; g <= groups; g++ {
		for _, m := range c.Members(g) {
			if s := c.Store(m.Name); s != nil {
				if info, ok, _ := s.Repository().Source("paced"); ok {
					most = max(most, info.TrimmedThrough)
				}
			}
		}
	}
	return most
}

// readAndAck delivers the receiver every message up to to and
// acknowledges them.
func readAndAck(t *testing.T, ctx context.Context, r *receiver.Receiver, to uint64) {
	t.Helper()
	if err := r.Read(ctx, receiver.Resume, to, func(receiver.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.Ack(to); err != nil {
		t.Fatal(err)
	}
}

// Blocking receiver-paced persistence: at the retention limit the leader
// holds the publisher back rather than release a message the paced
// receiver has not consumed; as the receiver consumes, the consumed
// messages are released and the publisher goes on.
func TestPacedBlockingHoldsThePublisherAtTheLimit(t *testing.T) {
	t.Parallel()
	c := pacedCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	p := pacedPublisher(t, ctx, c, publisher.PacingBlocking)
	r := pacedReceiver(t, c, "slow")
	if reg, err := r.Register(ctx); err != nil || reg.Groups[0].Pacing != wire.PacingBlocking {
		t.Fatalf("register: %+v, %v", reg, err)
	}
	var sent atomic.Uint64
	done := sendInBackground(ctx, p, 400, &sent)

	c.Eventually(30*time.Second, "the publisher is held back", func() bool { return p.Stats().HeldBack > 0 })
	// Each group holds it back at its own limit (with intergroup any, the
	// second group lets messages become stable until it is full too): wait
	// until Send has stopped for a second.
	held := sent.Load()
	c.Eventually(30*time.Second, "Send stops", func() bool {
		before := sent.Load()
		time.Sleep(time.Second)
		held = sent.Load()
		return held == before
	})
	// The limit, passed by at most what was in flight: a frame admitted
	// just below it and the flight behind it.
	if held > pacedLimit+3*20 {
		t.Fatalf("the publisher sent %d messages while held back at a limit of %d", held, pacedLimit)
	}
	if tt := trimmedThrough(c, 2); tt != 0 {
		t.Fatalf("a store released up to %d although the paced receiver consumed nothing", tt)
	}

	readAndAck(t, ctx, r, 60)
	c.Eventually(30*time.Second, "the publisher goes on once 60 are consumed", func() bool { return sent.Load() > held })
	if tt := trimmedThrough(c, 2); tt > 60 {
		t.Fatalf("released up to %d, beyond the 60 consumed", tt)
	}
	// The receiver consumes everything as it comes; the publisher finishes.
	go func() {
		_ = r.Follow(ctx, receiver.Resume, func(m receiver.Message) error { return r.Ack(m.Seq) }, nil)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("the publisher never finished: %d sent", sent.Load())
	}
	c.Eventually(30*time.Second, "everything consumed is released", func() bool { return trimmedThrough(c, 2) >= 350 })
}

// Non-blocking receiver-paced persistence: at the limit the oldest
// messages go anyway, even those an active paced receiver has not
// consumed, and that lagging receiver is told they are lost.
func TestPacedNonBlockingReleasesAndReportsLoss(t *testing.T) {
	t.Parallel()
	c := pacedCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	p := pacedPublisher(t, ctx, c, publisher.PacingNonBlocking)
	var sent atomic.Uint64
	if err := <-sendInBackground(ctx, p, 10, &sent); err != nil {
		t.Fatal(err)
	}
	r := pacedReceiver(t, c, "laggard")
	readAndAck(t, ctx, r, 10)
	c.Eventually(10*time.Second, "the group records the laggard at 10", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false // between leaders
		}
		pos, _, _, _ := l.Repository().Receiver("paced", "laggard")
		return pos.Seq == 10 && pos.Holds()
	})
	if err := <-sendInBackground(ctx, p, 390, &sent); err != nil {
		t.Fatalf("the publisher was held back in non-blocking mode: %v (%d sent)", err, sent.Load())
	}
	if p.Stats().HeldBack != 0 {
		t.Fatal("a non-blocking paced publisher was held back")
	}
	c.Eventually(30*time.Second, "retention releases the oldest", func() bool { return trimmedThrough(c, 1) >= 400-pacedLimit })
	lost := make(chan receiver.Range, 1)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = r.Follow(fctx, receiver.Resume, func(receiver.Message) error { return nil }, func(rg receiver.Range) { lost <- rg })
	}()
	select {
	case rg := <-lost:
		if rg.From != 11 || rg.To < 400-pacedLimit {
			t.Fatalf("reported loss %v, want 11 to at least %d", rg, 400-pacedLimit)
		}
	case <-ctx.Done():
		t.Fatal("the lagging receiver was not told of its loss")
	}
}

// A paced receiver that goes silent (no goodbye: it crashed) is expired
// by the leader after the receiver activity timeout; its hold on the
// source is released and the held-back publisher goes on.
func TestPacedSilentReceiverIsExpiredAndReleasesItsHold(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := pacedCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	p := pacedPublisher(t, ctx, c, publisher.PacingBlocking)
	// A receiver that registers and then never speaks again.
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "test", Timeout: 2 * time.Second})
	defer gc.Close()
	m, err := gc.Call(ctx, &wire.RegisterReceiver{Source: "paced", Receiver: "ghost", Session: "ghost-1", Paced: true})
	if rep, ok := m.(*wire.ReceiverRegistered); err != nil || !ok || !rep.Known {
		t.Fatalf("register the ghost: %#v, %v", m, err)
	}
	var sent atomic.Uint64
	done := sendInBackground(ctx, p, 300, &sent)
	c.Eventually(30*time.Second, "the ghost holds the publisher back", func() bool { return p.Stats().HeldBack > 0 })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("the publisher stayed held back by an expired receiver: %d sent", sent.Load())
	}
	for _, mb := range c.Members(1) {
		pos, _, found, err := c.Store(mb.Name).Repository().Receiver("paced", "ghost")
		if err != nil || !found || pos.Active || pos.ExpiredUnixNano == 0 || pos.Holds() {
			t.Errorf("%s records the ghost as %+v (found %v, %v), want expired", mb.Name, pos, found, err)
		}
	}
	if st, _ := c.WaitLeader(1, 10*time.Second).Repository().Pacing("paced"); st.Holders != 0 {
		t.Errorf("pacing after the expiry: %+v, want no holder", st)
	}
	// Its name is free: another instance registers at once.
	m, err = gc.Call(ctx, &wire.RegisterReceiver{Source: "paced", Receiver: "ghost", Session: "ghost-2", Paced: true})
	if _, ok := m.(*wire.ReceiverRegistered); err != nil || !ok {
		t.Fatalf("the expired name was not free: %#v, %v", m, err)
	}
}

// A store refuses receiver-paced persistence unless it allows it.
func TestPacedRefusedWhereNotAllowed(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.ReceiverPaced = "paced", c.Addrs(), publisher.PacingBlocking
	cfg.RegisterTimeout = time.Second
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	p, err := publisher.New(short, cfg)
	if err == nil {
		p.Close()
		t.Fatal("a store that does not allow receiver-paced persistence registered a paced source")
	}
	if !errors.Is(err, publisher.ErrRegistration) {
		t.Fatalf("err = %v", err)
	}
	if _, ok, _ := c.WaitLeader(1, 10*time.Second).Repository().Source("paced"); ok {
		t.Fatal("the refused registration created the source")
	}
}

// A receiver's state lifetime ends some time after it went silent: the
// group forgets it, and the name starts again as a new one.
func TestReceiverStateLifetimeForgets(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, func(c *storegroup.Config) {
		c.ReceiverActivityTimeout = time.Second
		c.ReceiverStateLifetime = 2 * time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.PublishDirect(ctx, 1, "s", 1, [][]byte{[]byte("1"), []byte("2")}); err != nil {
		t.Fatal(err)
	}
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "test", Timeout: 2 * time.Second})
	defer gc.Close()
	if _, err := gc.Call(ctx, &wire.RegisterReceiver{Source: "s", Receiver: "brief", Session: "b-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Call(ctx, &wire.ConsumedAs{Source: "s", Receiver: "brief", Session: "b-1", Seq: 2}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(30*time.Second, "the receiver is forgotten", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false // between leaders
		}
		_, _, found, err := l.Repository().Receiver("s", "brief")
		return err == nil && !found
	})
}

// The receivers' gauges and the held-back counter reach /metrics.
func TestReceiverMetrics(t *testing.T) {
	t.Parallel()
	c := pacedCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := pacedPublisher(t, ctx, c, publisher.PacingBlocking)
	var sent atomic.Uint64
	if err := <-sendInBackground(ctx, p, 30, &sent); err != nil {
		t.Fatal(err)
	}
	r := pacedReceiver(t, c, "app")
	readAndAck(t, ctx, r, 20)
	leader := c.WaitLeader(1, 30*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	labels := map[string]string{"source": "paced", "receiver": "app"}
	c.Eventually(10*time.Second, "the position reaches the gauge", func() bool {
		return metricValue(t, reg, "umstore_receiver_consumed_seq", labels) == 20
	})
	if lag := metricValue(t, reg, "umstore_receiver_lag_messages", labels); lag != 10 {
		t.Errorf("lag %v, want 10", lag)
	}
	if active := metricValue(t, reg, "umstore_receiver_active", labels); active != 1 {
		t.Errorf("active %v, want 1", active)
	}
	if idle := metricValue(t, reg, "umstore_receiver_idle_seconds", labels); idle < 0 || idle > 10 {
		t.Errorf("idle %v seconds, want a few", idle)
	}
	metricValue(t, reg, "umstore_publishers_held_back_total", nil)
}
