package storegroup_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
	"umstore/wire"
)

// floodName is the i-th unique source name of connection conn's flood
// in round round, 255 bytes long (repository.MaxSourceNameLen).
func floodName(round, conn, i int) string {
	name := fmt.Sprintf("flood.%d.%d.%d.", round, conn, i)
	return name + strings.Repeat("x", 255-len(name))
}

// floodResult is what one flooding connection was answered.
type floodResult struct {
	registered int
	refusals   map[string]int // refusal message (its first clause) -> count
	other      []string       // anything else: NotLeader, a broken connection
}

// flood pipelines n Registers of unique long names on one connection to
// addr (a writer and a reader at once, as a hostile client would) and
// gathers the answers. The connection stays open (its registrations
// held) until the caller closes it.
func flood(t *testing.T, addr string, round, conn, n int) (floodResult, *wire.Conn) {
	t.Helper()
	c, _, err := (&wire.Dialer{Client: "flood"}).Dial(context.Background(), addr)
	if err != nil {
		t.Errorf("dial %s: %v", addr, err)
		return floodResult{}, nil
	}
	t.Cleanup(func() { c.Close() })
	_ = c.NetConn().SetDeadline(time.Now().Add(60 * time.Second))
	go func() {
		for i := range n {
			if err := c.Send(&wire.Register{ReqID: uint64(i + 1), Source: floodName(round, conn, i), Session: fmt.Sprintf("flooder-%d-%d", round, conn)}); err != nil {
				return
			}
		}
	}()
	res := floodResult{refusals: map[string]int{}}
	for range n {
		m, err := c.Read()
		if err != nil {
			res.other = append(res.other, err.Error())
			return res, c
		}
		switch m := m.(type) {
		case *wire.Registered:
			res.registered++
		case *wire.Error:
			msg, _, _ := strings.Cut(m.Message, ":")
			res.refusals[m.Code+": "+msg]++
		default:
			res.other = append(res.other, fmt.Sprintf("%T", m))
		}
	}
	return res, c
}

// watchLeader asks the group's leader, on a connection of its own, for a
// Ping and a Probe every 50ms until stop is closed, and reports the
// slowest answer and whether the leader or its term ever changed.
func watchLeader(t *testing.T, addr string, stop <-chan struct{}) (slowest time.Duration, changes []string) {
	t.Helper()
	c, _, err := (&wire.Dialer{Client: "watch"}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	var leader string
	var term uint64
	for id := uint64(1); ; id += 2 {
		select {
		case <-stop:
			return slowest, changes
		case <-time.After(50 * time.Millisecond):
		}
		_ = c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if err := c.Send(&wire.Ping{ReqID: id}); err != nil {
			return slowest, append(changes, "ping: "+err.Error())
		}
		m, err := c.Read()
		if err != nil {
			return slowest, append(changes, "ping: "+err.Error())
		}
		if _, ok := m.(*wire.Pong); !ok {
			changes = append(changes, fmt.Sprintf("ping answered %T", m))
		}
		slowest = max(slowest, time.Since(start))
		if err := c.Send(&wire.Probe{ReqID: id + 1}); err != nil {
			return slowest, append(changes, "probe: "+err.Error())
		}
		if m, err = c.Read(); err != nil {
			return slowest, append(changes, "probe: "+err.Error())
		}
		p, ok := m.(*wire.ProbeReply)
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("probe answered %T", m))
		case p.State != "Leader":
			changes = append(changes, "the store's raft state became "+p.State)
		case term != 0 && p.LastTerm != term, leader != "" && p.Leader != leader:
			changes = append(changes, fmt.Sprintf("leader %s term %d became leader %s term %d", leader, term, p.Leader, p.LastTerm))
		}
		if ok {
			leader, term = p.Leader, p.LastTerm
		}
		slowest = max(slowest, time.Since(start))
	}
}

// TestRegisterFloodKeepsTheLeader is issue 27's case 3, bounded: pipelined
// Registers of unique 255-byte names flood one group's leader, from one
// connection and then from several at once. During the flood the group
// keeps its leader (same leader, same term) and a Ping on another
// connection is answered within a second; the registrations admitted are
// at most the limits (per connection, per store, and the sources the
// leader holds for sessions, which outlive the connections), and the
// refusals past them name the limit.
func TestRegisterFloodKeepsTheLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of Registers")
	}
	const perConn, perStore, sessions = 3000, 4000, 10000
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.ClientLimits.MaxSourcesPerConn = perConn
		cfg.ClientLimits.MaxSources = perStore
		cfg.ClientLimits.MaxSessions = sessions
		cfg.SourceActivityTimeout = 2 * time.Minute // nothing the flood registered expires during the test
	})
	leader := c.WaitLeader(1, 30*time.Second)
	addr := clientAddr(c, leader.Name())

	held, round := 0, 0 // sources registered by the cases so far (none expires during the test); the case's round of names
	for _, tc := range []struct {
		name        string
		conns, each int
		together    bool // the connections flood at once, each held open until all are done; else one after another, each closed before the next
		limit       int  // the most registrations admitted in all
	}{
		{"one connection", 1, 6000, true, perConn},
		{"four connections at once", 4, 2000, true, perStore},
		// Each connection's registrations are given back when it closes,
		// but the leader holds their sources for the flooder's sessions
		// until they go silent for SourceActivityTimeout: MaxSessions
		// bounds those, whatever the connections.
		{"four connections one after another", 4, 4000, false, 4 * perConn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			round++
			stop := make(chan struct{})
			var slowest time.Duration
			var changes []string
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				slowest, changes = watchLeader(t, addr, stop)
			}()
			start := time.Now()
			results := make([]floodResult, tc.conns)
			conns := make([]*wire.Conn, tc.conns)
			var wg sync.WaitGroup
			for i := range tc.conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], conns[i] = flood(t, addr, round, i, tc.each)
				}()
				if !tc.together {
					wg.Wait()
					if conns[i] != nil {
						conns[i].Close()
					}
				}
			}
			wg.Wait()
			for _, cn := range conns {
				if cn != nil {
					cn.Close()
				}
			}
			took := time.Since(start)
			close(stop)
			<-watched

			registered, refused := 0, 0
			for i, r := range results {
				registered += r.registered
				if len(r.other) > 0 {
					t.Errorf("connection %d was answered other than Registered or a refusal: %v", i, r.other[:min(len(r.other), 5)])
				}
				for msg, n := range r.refusals {
					refused += n
					if !strings.Contains(msg, wire.CodeUnavailable) {
						t.Errorf("connection %d: %d refusals %q, want %s naming the limit", i, n, msg, wire.CodeUnavailable)
					}
				}
			}
			t.Logf("%d Registers in %v: %d registered, %d refused; slowest Ping/Probe %v; refusals: %v",
				tc.conns*tc.each, took.Round(time.Millisecond), registered, refused, slowest.Round(time.Millisecond), results[0].refusals)
			if limit := min(tc.limit, sessions-held); registered > limit {
				t.Errorf("%d registrations admitted, more than the limit %d (%d sources held for sessions before)", registered, limit, held)
			}
			held += registered
			if refused == 0 || registered+refused != tc.conns*tc.each {
				t.Errorf("%d registered and %d refused of %d", registered, refused, tc.conns*tc.each)
			}
			for _, r := range results {
				for msg := range r.refusals {
					if !strings.Contains(msg, "already holds") || !strings.Contains(msg, "(limit Max") {
						t.Errorf("a refusal %q does not say what the connection or store holds and which limit it met", msg)
					}
				}
			}
			if len(changes) > 0 {
				t.Errorf("during the flood: %v", changes)
			}
			if slowest > time.Second {
				t.Errorf("the slowest Ping or Probe during the flood took %v, want within 1s", slowest)
			}
			if !leader.IsLeader() {
				t.Errorf("%s no longer leads after the flood", leader.Name())
			}
		})
	}
}
