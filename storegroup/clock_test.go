package storegroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/internal/wallclock"
	"umstore/publisher"
	"umstore/storegroup"
	"umstore/wire"
)

// A wall clock stepped an hour forward, then back, on every store expires
// no live publisher's session and forgets no expired receiver before its
// state lifetime: both are judged on clocks no step moves. (Before the
// lifetime was judged by the leader's own clock too, the first scan after
// the step forgot the receiver.)
func TestClockStepExpiresNothingEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("24 s of publishing on a stepped clock, alone (it steps the process's clock): in the full run")
	}
	t.Cleanup(func() { wallclock.Set(0) })
	c := clustertest.Start(t, 1, func(c *storegroup.Config) {
		c.ReceiverActivityTimeout = time.Second
		c.ReceiverStateLifetime = time.Minute
		c.SourceActivityTimeout = 3 * time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source = "s"
	cfg.Groups = c.Addrs()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "test", Timeout: 2 * time.Second})
	defer gc.Close()
	if _, err := gc.Call(ctx, &wire.RegisterReceiver{Source: "s", Receiver: "brief", Session: "b-1"}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(30*time.Second, "the silent receiver is expired", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false // between leaders
		}
		pos, _, found, err := l.Repository().Receiver("s", "brief")
		return err == nil && found && !pos.Active
	})
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		wallclock.Set(step)
		// Past two scans for ended lifetimes (every 5 s) and two source
		// activity timeouts, publishing all along.
		for i := range 24 {
			if _, err := p.Send(ctx, []byte(fmt.Sprintf("%v %d", step, i))); err != nil {
				t.Fatalf("send with the clock stepped %v: %v", step, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatalf("flush with the clock stepped %v: %v (the publisher's session expired?)", step, err)
		}
		if _, _, found, err := c.WaitLeader(1, 10*time.Second).Repository().Receiver("s", "brief"); err != nil || !found {
			t.Fatalf("with the clock stepped %v the expired receiver was forgotten %v into a one-minute lifetime (err %v)", step, 12*time.Second, err)
		}
	}
	if st := p.Stats(); st.Reconnects != 0 {
		t.Fatalf("the publisher reconnected %d times: its session was taken", st.Reconnects)
	}
}
