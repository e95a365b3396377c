package storegroup_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/quorum"
	"umstore/storegroup"
	"umstore/wire"
)

// intragroupConn is a publisher's connection to a group's leader at the
// wire level, registered for one source with an intragroup behaviour.
type intragroupConn struct {
	t      *testing.T
	conn   wire.FrameConn
	source string
	reg    *wire.Registered
	reqID  uint64
	held   []string // the reasons of the HeldBack notices read so far
}

// registerIntragroup registers source at group 1's leader, asking for
// intragroup behaviour asked ("" sends a plain Register).
func registerIntragroup(t *testing.T, ctx context.Context, c *clustertest.Cluster, source, asked string) *intragroupConn {
	t.Helper()
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "intragroup test", Timeout: 2 * time.Second})
	t.Cleanup(gc.Close)
	var req wire.Message = &wire.Register{ReqID: 1, Source: source, Session: "s-" + source}
	if asked != "" {
		req = &wire.RegisterSource{ReqID: 1, Source: source, Session: "s-" + source, Intragroup: asked}
	}
	conn, m, err := gc.Open(ctx, req, groupclient.OpenOptions{Reply: wire.TypeRegistered})
	if err != nil {
		t.Fatalf("register %s: %v", source, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &intragroupConn{t: t, conn: conn, source: source, reg: m.(*wire.Registered), reqID: 1}
}

// publish sends one message as sequence number seq.
func (ic *intragroupConn) publish(seq uint64) uint64 {
	ic.t.Helper()
	ic.reqID++
	p := []byte(fmt.Sprintf("%s #%d", ic.source, seq))
	if err := ic.conn.Send(&wire.Publish{ReqID: ic.reqID, Source: ic.source, FirstSeq: seq, Payloads: [][]byte{p}, Checksums: []uint32{wire.Checksum(p)}}); err != nil {
		ic.t.Fatal(err)
	}
	return ic.reqID
}

// answer waits up to timeout for the answer to request reqID, collecting
// HeldBack notices on the way; it returns nil if none came in time.
func (ic *intragroupConn) answer(reqID uint64, timeout time.Duration) wire.Message {
	ic.t.Helper()
	deadline := time.Now().Add(timeout)
	defer ic.conn.SetReadDeadline(time.Time{})
	for {
		_ = ic.conn.SetReadDeadline(deadline)
		m, err := ic.conn.Read()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil
		}
		if err != nil {
			ic.t.Fatalf("read the answer to request %d: %v", reqID, err)
		}
		switch m := m.(type) {
		case *wire.HeldBack:
			ic.held = append(ic.held, m.Reason)
		case *wire.Ack:
			if m.ReqID == reqID {
				return m
			}
		default:
			return m
		}
	}
}

// waitAck waits for the Ack of request reqID and fails the test on anything
// else.
func (ic *intragroupConn) waitAck(reqID uint64, timeout time.Duration, what string) {
	ic.t.Helper()
	m := ic.answer(reqID, timeout)
	if _, ok := m.(*wire.Ack); !ok {
		ic.t.Fatalf("%s: got %#v within %v, want an Ack", what, m, timeout)
	}
}

// follower returns a member of group 1 other than its leader.
func follower(c *clustertest.Cluster) storegroup.Member {
	l := c.Leader(1)
	for _, m := range c.Members(1) {
		if l == nil || m.Name != l.Name() {
			return m
		}
	}
	return storegroup.Member{}
}

// TestIntragroupAllWithAMemberDown: under intragroup all the leader
// acknowledges a Publish only once every member holds it. With a member
// down it acknowledges nothing, and says why (HeldBack), while a source
// under quorum on the same group is acknowledged at once; when the member
// is back, the held answer goes out. Before the intragroup behaviours the
// Ack came at the commit.
func TestIntragroupAllWithAMemberDown(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	all := registerIntragroup(t, ctx, c, "strict", "all")
	if all.reg.Intragroup != "all" {
		t.Fatalf("Registered.Intragroup = %q, want all", all.reg.Intragroup)
	}
	loose := registerIntragroup(t, ctx, c, "loose", "")
	if loose.reg.Intragroup != "quorum" {
		t.Fatalf("a plain Register: Registered.Intragroup = %q, want quorum", loose.reg.Intragroup)
	}
	all.waitAck(all.publish(1), 20*time.Second, "every member up")

	down := follower(c)
	c.Kill(down.Name)
	loose.waitAck(loose.publish(1), 20*time.Second, "quorum with a member down")
	req := all.publish(2)
	if m := all.answer(req, 3*time.Second); m != nil {
		t.Fatalf("intragroup all with %s down answered %#v; it must hold the answer", down.Name, m)
	}
	if len(all.held) == 0 || !strings.Contains(all.held[len(all.held)-1], down.Name) {
		t.Fatalf("held back without saying why, or without naming %s: %q", down.Name, all.held)
	}

	c.StartStore(down.Name)
	all.waitAck(req, 30*time.Second, "the member is back")
	if st := c.Store(down.Name).Status(); st.LastIndex == 0 {
		t.Fatalf("%s acknowledged for, but its log is empty", down.Name)
	}
}

// TestIntragroupAllActiveWithAMemberDown: under all-active a member that
// stops answering stops counting: the answer waits at most until the
// leader sees it is down, then goes out with the others' copies.
func TestIntragroupAllActiveWithAMemberDown(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ic := registerIntragroup(t, ctx, c, "active", "all-active")
	if ic.reg.Intragroup != "all-active" {
		t.Fatalf("Registered.Intragroup = %q, want all-active", ic.reg.Intragroup)
	}
	ic.waitAck(ic.publish(1), 20*time.Second, "every member up")
	c.Kill(follower(c).Name)
	ic.waitAck(ic.publish(2), 20*time.Second, "a member down")
	ic.waitAck(ic.publish(3), 20*time.Second, "a member down for a while")
}

// slowLinks delays every write to the stores named in slow (by raft
// address), whoever writes: a member behind a slow link or a slow disk,
// which still answers, late.
type slowLinks struct {
	delay time.Duration
	slow  atomic.Value // string: the raft address of the slow store; "" none
}

func (sl *slowLinks) tune(cfg *storegroup.Config) {
	clustertest.PatientRaft(cfg)
	dial := cfg.Dial
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &slowConn{Conn: nc, to: address, links: sl}, nil
	}
}

type slowConn struct {
	net.Conn
	to    string
	links *slowLinks
}

func (sc *slowConn) Write(b []byte) (int, error) {
	if s, _ := sc.links.slow.Load().(string); s == sc.to {
		time.Sleep(sc.links.delay)
	}
	return sc.Conn.Write(b)
}

// TestIntragroupWithASlowMember: a member that answers, late, holds every
// answer back under all-active and all: when the Ack comes, the slow
// member's log has the entry. Under quorum the Ack does not wait for it.
func TestIntragroupWithASlowMember(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	links := &slowLinks{delay: 400 * time.Millisecond}
	links.slow.Store("")
	c := clustertest.Start(t, 1, links.tune)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	slow := follower(c)

	for _, behaviour := range []string{"all-active", "all"} {
		ic := registerIntragroup(t, ctx, c, "slow-"+behaviour, behaviour)
		ic.waitAck(ic.publish(1), 30*time.Second, behaviour+": every member quick")

		links.slow.Store(slow.RaftAddr)
		before := c.WaitLeader(1, 30*time.Second).Status().LastIndex
		start := time.Now()
		ic.waitAck(ic.publish(2), 30*time.Second, behaviour+": a slow member")
		took := time.Since(start)
		got := c.Store(slow.Name).Status().LastIndex
		links.slow.Store("")
		if got <= before {
			t.Errorf("%s: acknowledged after %v while the slow member %s's log ends at %d, not past %d, the leader's before the Publish", behaviour, took, slow.Name, got, before)
		}
		if took < links.delay {
			t.Errorf("%s: acknowledged after %v, less than the slow member's delay %v", behaviour, took, links.delay)
		}
	}

	// Quorum does not wait for the slow member (nothing to assert on time:
	// only that it is acknowledged with the slow member still slow).
	links.slow.Store(slow.RaftAddr)
	defer links.slow.Store("")
	ic := registerIntragroup(t, ctx, c, "slow-quorum", "")
	ic.waitAck(ic.publish(1), 30*time.Second, "quorum with a slow member")
}

// TestIntragroupAllAndIntergroupAny: with a member of group 1 down, group
// 1's leader refuses a registration under intragroup all (Error
// members-down naming the member), as UM does not complete it, and
// records nothing. Under intergroup any the publisher registers with
// group 2 alone and its messages are stable through it; once the member is
// back group 1 takes the registration and confirms them too. Before, group
// 1 completed the registration and then confirmed nothing.
func TestIntragroupAllAndIntergroupAny(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var down storegroup.Member
	for _, m := range c.Members(1) {
		if l := c.Leader(1); m.Name != l.Name() {
			down = m
		}
	}
	c.Kill(down.Name)
	// The leader counts a member as running until it has been silent for
	// three heartbeat timeouts.
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "intragroup test", Timeout: 2 * time.Second})
	defer gc.Close()
	var refusal *wire.Error
	for deadline := time.Now().Add(10 * time.Second); refusal == nil; time.Sleep(100 * time.Millisecond) {
		req := &wire.RegisterSource{ReqID: 1, Source: "probe", Session: "s-probe", Intragroup: "all"}
		conn, _, err := gc.Open(ctx, req, groupclient.OpenOptions{Reply: wire.TypeRegistered, NextOnError: func(*wire.Error) bool { return false }})
		if err == nil {
			conn.Close() // registered while the member still counted as running
		} else if !errors.As(err, &refusal) {
			t.Fatalf("register under intragroup all with %s down: %v", down.Name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("group 1 still completes registrations under intragroup all %v after %s stopped", 10*time.Second, down.Name)
		}
	}
	if refusal.Code != wire.CodeMembersDown || !strings.Contains(refusal.Message, down.Name+" (not heard from for") {
		t.Fatalf("the refusal: %+v; want %s naming %s", refusal, wire.CodeMembersDown, down.Name)
	}

	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Intragroup = "strict-sdk", c.Addrs(), quorum.IntragroupAll
	cfg.RegisterTimeout, cfg.ReconnectDelay = time.Second, 200*time.Millisecond
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if g := p.Registration().Groups; g[0].Answered || !g[1].Answered || g[1].Intragroup != quorum.IntragroupAll {
		t.Fatalf("registration with a member of group 1 down: %+v; want group 2 alone, applying all", g)
	}
	for i := 0; i < 10; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Confirmed[0] >= p.FirstSeq() || st.Confirmed[1] < p.FirstSeq()+9 {
		t.Fatalf("confirmed %v with a member of group 1 down: want nothing from group 1 and all 10 from group 2", st.Confirmed)
	}
	c.StartStore(down.Name)
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := p.WaitAllGroups(wait); err != nil {
		t.Fatalf("group 1 did not confirm once its member was back: %v (confirmed %v)", err, p.Stats().Confirmed)
	}
	if n := p.Stats().LateHigherGroup; n != 0 {
		t.Fatalf("group 1, registered late, was taken for holding numbers beyond the resume point %d times", n)
	}
}

// The deployment's intragroup behaviour (Config.Intragroup) is the least
// every source gets: a plain Register is answered with it and its Acks
// wait as it says; a publisher may ask for a stricter one, never a weaker
// one, and a name the store does not know is refused.
func TestIntragroupFloorFromTheDeployment(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.Intragroup = quorum.IntragroupAll })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, asked := range []string{"", "quorum", "all-active", "all-stores"} {
		ic := registerIntragroup(t, ctx, c, "floor-"+asked, asked)
		if ic.reg.Intragroup != "all" {
			t.Errorf("deployment all, asked %q: Registered.Intragroup = %q, want all", asked, ic.reg.Intragroup)
		}
	}
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "intragroup test", Timeout: 2 * time.Second})
	defer gc.Close()
	_, _, err := gc.Open(ctx, &wire.RegisterSource{ReqID: 1, Source: "bad", Session: "s", Intragroup: "most"}, groupclient.OpenOptions{Reply: wire.TypeRegistered})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, "most") {
		t.Fatalf("RegisterSource with intragroup \"most\": %v, want a bad-request naming it", err)
	}

	// A plain registration's Acks wait for every member.
	ic := registerIntragroup(t, ctx, c, "floor-held", "")
	ic.waitAck(ic.publish(1), 20*time.Second, "every member up")
	c.Kill(follower(c).Name)
	if m := ic.answer(ic.publish(2), 2*time.Second); m != nil {
		t.Fatalf("deployment intragroup all with a member down answered a plain registration's Publish with %#v", m)
	}
}
