package storegroup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/memberauth"
	"umstore/internal/testmain"
	"umstore/storegroup"
	"umstore/wire"
)

var (
	memberSecret   = bytes.Repeat([]byte{0x5a}, 32)
	strangerSecret = bytes.Repeat([]byte{0xa5}, 32)
)

// withSecret gives every store the deployment's member secret: moves are
// authenticated by it, and refused without one.
func withSecret(cfg *storegroup.Config) { cfg.Security.MemberSecret = memberSecret }

// hostA are the stores the 2+1 / 1+2 layout puts on host A.
var hostA = []string{"G1S1", "G1S2", "G2S1"}

// syncLog is a log the stores write to and the test reads.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replaceHostA runs the two-host layout, publishes 1000 messages of
// "moved", then loses host A with its disk and replaces it by a server at
// other addresses, until every store of host B reaches A's stores there.
func replaceHostA(t *testing.T) (*clustertest.Cluster, map[string]storegroup.Member) {
	t.Helper()
	c := clustertest.New(t, clustertest.Options{Groups: 2, Tune: withSecret})
	publishRange(t, c, "moved", 1000, 50)
	// The publisher's goodbye frees the source through the log; host A
	// must not die before it is recorded, or every later leader holds the
	// source for the activity timeout and the last publish below waits it
	// out. Nor before host B's stores have caught up from the start: a
	// store that joined empty and is still catching up holds nothing, and
	// with host A's disks gone its group would hold nothing either.
	c.Eventually(10*time.Second, "both groups recorded the publisher's goodbye and every store caught up", func() bool {
		for g := 1; g <= 2; g++ {
			l := c.Leader(g)
			if l == nil {
				return false
			}
			if info, ok, _ := l.Repository().Source("moved"); !ok || info.Session != "" {
				return false
			}
			for _, m := range c.Members(g) {
				s := c.Store(m.Name)
				if s == nil || s.Status().CatchingUp || highSeq(t, s, "moved") != 1000 {
					return false
				}
			}
		}
		return true
	})
	for _, name := range hostA {
		c.Kill(name)
		c.Wipe(name)
	}
	moved := map[string]storegroup.Member{}
	for _, name := range hostA {
		moved[name] = c.Move(name)
	}
	for _, name := range hostA {
		c.StartStore(name)
	}
	c.Eventually(60*time.Second, "the replaced stores catch up at their new addresses and every store holds every message", func() bool {
		for g := 1; g <= 2; g++ {
			for _, m := range c.Members(g) {
				s := c.Store(m.Name)
				if s == nil || s.Status().CatchingUp || highSeq(t, s, "moved") != 1000 {
					return false
				}
			}
		}
		return true
	})
	// Every member of host B, started with the old addresses, now reaches
	// host A's stores at their new ones, from the group's log.
	c.Eventually(30*time.Second, "host B's stores record the moves and raft's configuration holds the new addresses", func() bool {
		for _, name := range []string{"G1S3", "G2S2", "G2S3"} {
			s := c.Store(name)
			want := 1
			if s.Group() == 1 {
				want = 2
			}
			got := 0
			for _, mv := range s.Status().Moved {
				if mv.Recorded && mv.ClientAddr == moved[mv.Name].ClientAddr && mv.RaftAddr == moved[mv.Name].RaftAddr {
					got++
				}
			}
			if got != want {
				return false
			}
			for id, addr := range s.RaftAddresses() {
				if m, ok := moved[id]; ok && addr != m.RaftAddr {
					return false
				}
			}
		}
		return true
	})
	return c, moved
}

// Host A of the two-host layout is lost with its disk and replaced by a
// server at other addresses; host B runs on with the configuration it had.
// Group 1 has only G1S3 (on B) with state and no quorum, so no leader can
// change its membership: G1S3 must accept the new incarnations' addresses
// itself, be elected with G1S1's vote, and record the move once it leads.
// Group 2 keeps its leader on B, which records G2S1's move. Then every
// store holds every message, raft's configuration and every member's view
// name the new addresses, and with host B gone the new host A carries
// group 1 on its own.
func TestReplacedHostRejoinsAtItsNewAddresses(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c, moved := replaceHostA(t)
	// A follower on host B redirects clients to the leader where it
	// listens now.
	if l := c.WaitLeader(1, 10*time.Second); l.Name() == "G1S3" {
		if err := l.TransferLeadership(moved["G1S1"]); err != nil {
			t.Fatal(err)
		}
	}
	c.Eventually(30*time.Second, "G1S3 redirects clients to group 1's leader on host A at its new address", func() bool {
		l := c.Leader(1)
		if l == nil || l.Name() == "G1S3" {
			return false
		}
		nl := notLeaderFrom(t, c.Moved("G1S3").ClientAddr)
		return nl.LeaderName == l.Name() && nl.Leader == moved[l.Name()].ClientAddr
	})
	for _, name := range []string{"G1S3", "G2S2", "G2S3"} {
		c.Kill(name)
	}
	l := c.WaitLeader(1, 30*time.Second)
	if l.Name() != "G1S1" && l.Name() != "G1S2" {
		t.Fatalf("group 1 is led by %s", l.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.PublishDirect(ctx, 1, "moved", 1001, [][]byte{[]byte("after B")}); err != nil {
		t.Fatalf("publishing through the new host A alone: %v", err)
	}
	c.WaitHeld("G1S1", "moved", 1001, 10*time.Second)
	c.WaitHeld("G1S2", "moved", 1001, 10*time.Second)
}

// After host A was replaced at other addresses, host B loses its disk
// and comes back empty with the deployment file it had, which names host
// A's old addresses. Host A's stores tell B's empty ones where they listen
// now (a member that comes back empty is told again), B's stores take
// their turns to catch up, and every store holds every message.
func TestEmptyHostRejoinsAReplacedHost(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c, _ := replaceHostA(t)
	hostB := []string{"G1S3", "G2S2", "G2S3"}
	for _, name := range hostB {
		c.Kill(name)
		c.Wipe(name)
	}
	for _, name := range hostB {
		c.StartStore(name) // the host's stores take their turns to join (Admission)
	}
	c.Eventually(90*time.Second, "host B's empty stores catch up from the replaced host", func() bool {
		for _, name := range hostB {
			s := c.Store(name)
			if s == nil || s.Err() != nil || s.Status().CatchingUp || highSeq(t, s, "moved") != 1000 {
				return false
			}
		}
		return true
	})
	for g := 1; g <= 2; g++ {
		if err := c.EnsureSame(g, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// notLeaderFrom asks the store at addr to register a source, which only a
// leader does, and returns its redirect.
func notLeaderFrom(t *testing.T, addr string) *wire.NotLeader {
	t.Helper()
	conn, _, err := (&wire.Dialer{Client: "test", Timeout: 2 * time.Second}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Send(&wire.Register{ReqID: 1, Source: "probe-redirect", Session: "test"}); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Read()
	if err != nil {
		t.Fatal(err)
	}
	nl, ok := m.(*wire.NotLeader)
	if !ok {
		t.Fatalf("a follower answered a Register with %T", m)
	}
	return nl
}

// mover speaks MemberMove on one connection, as a store would, or as a
// stranger would.
type mover struct {
	t    *testing.T
	conn *wire.Conn
}

func dialMover(t *testing.T, addr string) *mover {
	t.Helper()
	conn, _, err := (&wire.Dialer{Client: "test mover", Timeout: 5 * time.Second}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.NetConn().SetDeadline(time.Now().Add(30 * time.Second))
	return &mover{t: t, conn: conn}
}

func (mv *mover) ask(m wire.Message) wire.Message {
	mv.t.Helper()
	if err := mv.conn.Send(m); err != nil {
		mv.t.Fatal(err)
	}
	reply, err := mv.conn.Read()
	if err != nil {
		mv.t.Fatal(err)
	}
	return reply
}

// challenge sends the first round of a move and returns the challenge.
func (mv *mover) challenge(req *wire.MemberMove) *wire.MemberChallenge {
	mv.t.Helper()
	first := *req
	first.AcceptorNonce, first.Proof = nil, nil
	ch, ok := mv.ask(&first).(*wire.MemberChallenge)
	if !ok {
		mv.t.Fatal("no challenge")
	}
	return ch
}

// A stranger cannot move a member: without the member secret (no proof, a
// forged proof, another deployment's secret) and with a proof replayed from
// another connection, every store refuses, keeps routing the member where
// it was, and the member keeps getting its group's writes. A deployment
// without a member secret takes no moves at all.
func TestStrangerCannotMoveAMember(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: withSecret})
	victim := c.Members(1)[1] // G1S2
	// Where the stranger wants the member's traffic: its own listener on
	// this host, so the "comes from the new host" check holds.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	trap := ln.Addr().String()
	to := c.Members(1)[0] // G1S1
	req := &wire.MemberMove{ReqID: 1, Store: victim.Name, RaftAddr: trap, ClientAddr: trap, Nonce: memberauth.NewNonce()}
	body := wire.MemberMoveBody(victim.Name, trap, trap)
	prove := func(secret []byte, ch *wire.MemberChallenge) []byte {
		return memberauth.Request{Dialer: victim.Name, Acceptor: ch.Store, DialerNonce: req.Nonce, AcceptorNonce: ch.Nonce, Body: body}.DialerProof(secret)
	}
	refused := func(what string, m wire.Message) {
		t.Helper()
		v, ok := m.(*wire.MemberMoved)
		if !ok || v.Verdict != wire.MoveRefused {
			t.Fatalf("%s: the store answered %#v, want a refusal", what, m)
		}
	}

	// No proof at all: the second round without one.
	mv := dialMover(t, to.ClientAddr)
	ch := mv.challenge(req)
	again := *req
	again.AcceptorNonce = ch.Nonce
	refused("no proof", mv.ask(&again))
	// A forged proof, and one under another secret.
	for what, proof := range map[string][]byte{"forged proof": bytes.Repeat([]byte{1}, 32), "another secret": nil} {
		mv := dialMover(t, to.ClientAddr)
		ch := mv.challenge(req)
		if proof == nil {
			proof = prove(strangerSecret, ch)
		}
		again := *req
		again.AcceptorNonce, again.Proof = ch.Nonce, proof
		refused(what, mv.ask(&again))
	}
	// A proof made for one connection's challenge, replayed on another:
	// the new connection's challenge is another nonce. (Made with the real
	// secret, as a proof recorded off the wire would be.)
	first := dialMover(t, to.ClientAddr)
	recorded := first.challenge(req)
	replay := *req
	replay.AcceptorNonce, replay.Proof = recorded.Nonce, prove(memberSecret, recorded)
	second := dialMover(t, to.ClientAddr)
	second.challenge(req)
	refused("replayed proof", second.ask(&replay))
	// A challenge answers one request only: once spent (here on a forged
	// proof), even the right proof for it is refused.
	forged := replay
	forged.Proof = bytes.Repeat([]byte{2}, 32)
	refused("forged proof on the first connection", first.ask(&forged))
	refused("second use of a challenge", first.ask(&replay))
	// Even with the secret, a member is never moved to where nothing
	// answers as that member.
	member := dialMover(t, to.ClientAddr)
	ch = member.challenge(req)
	valid := *req
	valid.AcceptorNonce, valid.Proof = ch.Nonce, prove(memberSecret, ch)
	v, ok := member.ask(&valid).(*wire.MemberMoved)
	if !ok || v.Verdict != wire.MoveRefused || !strings.Contains(v.Reason, "nothing answers") {
		t.Fatalf("a move to where no store answers: %#v", v)
	}

	for _, m := range c.Members(1) {
		if moved := c.Store(m.Name).Status().Moved; len(moved) != 0 {
			t.Fatalf("%s believes a member moved: %+v", m.Name, moved)
		}
	}
	publishRange(t, c, "still-there", 100, 10)
	c.WaitHeld(victim.Name, "still-there", 100, 10*time.Second)

	// Without a member secret nothing can prove membership: no move.
	plain := clustertest.New(t, clustertest.Options{Groups: 1})
	pv := dialMover(t, plain.Members(1)[0].ClientAddr)
	v, ok = pv.ask(&wire.MemberMove{ReqID: 1, Store: "G1S2", RaftAddr: trap, ClientAddr: trap, Nonce: memberauth.NewNonce()}).(*wire.MemberMoved)
	if !ok || v.Verdict != wire.MoveRefused || !strings.Contains(v.Reason, "no member secret") {
		t.Fatalf("a deployment without a member secret answered %#v", v)
	}
}

// A store whose name is taken by a second incarnation at another address
// while it is still alive keeps its place: every member refuses the new
// addresses (it still answers at its old ones), the impostor gets nothing
// of the group's log and says why in its status. Once the old incarnation
// stops, the same request is accepted and the new one catches up: there
// are never two live incarnations of one store.
func TestLiveStoreCannotBeReplaced(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: withSecret})
	publishRange(t, c, "alive", 300, 30)
	name := "G1S2"
	cfg := c.Config(name)
	newAddrs := storegroup.Member{Name: name, RaftAddr: freeLoopback(t), ClientAddr: freeLoopback(t)}
	for i := range cfg.Members {
		if cfg.Members[i].Name == name {
			cfg.Members[i] = newAddrs
		}
	}
	cfg.DataDir = t.TempDir()
	impostor, err := storegroup.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Abort()
	c.Eventually(30*time.Second, "the members refuse the second incarnation's addresses", func() bool {
		return strings.Contains(impostor.Status().MoveRefused, "still answers")
	})
	publishRange(t, c, "alive", 300, 30) // more writes while the impostor waits
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.Members(1) {
			if moved := c.Store(m.Name).Status().Moved; len(moved) != 0 {
				t.Fatalf("%s moved %s to the impostor's addresses: %+v", m.Name, name, moved)
			}
		}
		if n := highSeq(t, impostor, "alive"); n != 0 {
			t.Fatalf("the impostor holds messages up to %d", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.WaitHeld(name, "alive", 600, 10*time.Second)

	c.Stop(name)
	c.Eventually(30*time.Second, "with the old incarnation stopped, the new one is accepted and catches up", func() bool {
		st := impostor.Status()
		return st.MoveRefused == "" && !st.CatchingUp && highSeq(t, impostor, "alive") == 600
	})
}

// freeLoopback returns a loopback address whose port was free a moment ago.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The amnesia case with a move: A and B acknowledged writes while C was
// down; A and B stop, B's server is replaced (empty, other addresses) and
// B's new incarnation crashed half-way through catching up (its rejoin
// marker holds A's position). C (stale) accepts B's new addresses and asks
// it for votes there, and B's vote gate refuses every one: C is never
// elected. When A returns it is, and nothing acknowledged is lost.
func TestReplacedStoreNeverVotesBeforeItCaughtUp(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	logs := &syncLog{}
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: withSecret, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	a := c.WaitLeader(1, 10*time.Second).Name()
	others := otherMembers(c, 1, a)
	b, stale := others[0], others[1]
	c.Kill(stale)
	publishRange(t, c, "gate", 2000, 10)
	st := c.Store(a).Status()
	c.Stop(a)
	c.Stop(b)
	c.Wipe(b)
	c.Move(b)
	writeRejoinMarker(t, c.DataDir(b), st.LastTerm, st.LastIndex, a)
	c.StartStore(stale)
	bs := c.StartStore(b)
	c.Eventually(20*time.Second, b+" runs raft behind its shut vote gate and "+stale+" asks it for votes at its new address", func() bool {
		s := bs.Status()
		return s.State != "starting" && s.CatchingUp && strings.Contains(logs.String(), "refused a vote") && strings.Contains(logs.String(), "candidate="+stale)
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(1); l != nil {
			t.Fatalf("%s was elected with the vote of a replaced store that had not caught up", l.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.StartStore(a)
	c.WaitLeader(1, 30*time.Second)
	c.Eventually(30*time.Second, "every member holds all 2000 messages and "+b+" caught up", func() bool {
		for _, m := range c.Members(1) {
			if highSeq(t, c.Store(m.Name), "gate") != 2000 {
				return false
			}
		}
		return !bs.Status().CatchingUp
	})
	sameDigests(t, c)
}

// writeRejoinMarker leaves in dir the marker of a store that joined empty
// with (term, index) of member from as its target and crashed before
// catching up.
func writeRejoinMarker(t *testing.T, dir string, term, index uint64, from string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"target": map[string]uint64{"term": term, "index": index}, "from": from})
	if err := os.WriteFile(filepath.Join(dir, "rejoin.json"), raw, 0o640); err != nil {
		t.Fatal(err)
	}
}
