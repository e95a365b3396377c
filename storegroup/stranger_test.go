package storegroup_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/cli"
	"umstore/internal/clustertest"
	"umstore/internal/memberauth"
	"umstore/internal/testmain"
	"umstore/internal/testpki"
	"umstore/placement"
	"umstore/publisher"
	"umstore/repository"
	"umstore/storegroup"
	"umstore/wire"
)

// tlsStream is a raft.StreamLayer over TLS, as an attacker would write one
// to use hashicorp/raft's own NetworkTransport against a TLS raft port.
type tlsStream struct {
	net.Listener
	cfg *tls.Config
}

func (s tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.cfg)
}

// strangerTransport is hashicorp/raft's TCP transport, or its network
// transport over TLS with the given client configuration.
func strangerTransport(t *testing.T, tlsCfg *tls.Config) *raft.NetworkTransport {
	t.Helper()
	var trans *raft.NetworkTransport
	if tlsCfg == nil {
		tcp, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 3*time.Second, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		trans = tcp
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		trans = raft.NewNetworkTransport(tlsStream{ln, tlsCfg}, 2, 3*time.Second, io.Discard)
	}
	t.Cleanup(func() { trans.Close() })
	return trans
}

// forgeTrim sends the follower, as a leader of the next term would, one
// entry that trims every message of source through high, with a commit
// index covering it; then a TimeoutNow. It returns the two RPCs' errors
// and whether the follower said it appended the entry.
func forgeTrim(trans *raft.NetworkTransport, follower storegroup.Member, st storegroup.Status, term uint64, source string, high uint64) (appendErr, timeoutErr error, success bool) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(trans.LocalAddr())}
	req := &raft.AppendEntriesRequest{
		RPCHeader:    hdr,
		Term:         term + 1,
		PrevLogEntry: st.LastIndex,
		PrevLogTerm:  st.LastTerm,
		Entries: []*raft.Log{{
			Index: st.LastIndex + 1,
			Term:  term + 1,
			Type:  raft.LogCommand,
			Data:  repository.EncodeTrim(repository.Trim{Source: source, Through: high, Reason: "forged"}),
		}},
		LeaderCommitIndex: st.LastIndex + 1,
	}
	var resp raft.AppendEntriesResponse
	appendErr = trans.AppendEntries(raft.ServerID(follower.Name), raft.ServerAddress(follower.RaftAddr), req, &resp)
	var tresp raft.TimeoutNowResponse
	timeoutErr = trans.TimeoutNow(raft.ServerID(follower.Name), raft.ServerAddress(follower.RaftAddr), &raft.TimeoutNowRequest{RPCHeader: hdr}, &tresp)
	return appendErr, timeoutErr, resp.Success
}

// A process that is not a member dials a follower's raft port with
// hashicorp/raft's own transport and sends a forged AppendEntries (the
// next term, one Trim entry, a commit index) and a TimeoutNow. Before
// members authenticated each other the follower applied it: with no
// security section, with a client token (the raft port ignored it) and
// with mutual TLS given any certificate of the deployment's CA. Now the
// follower answers nothing, the group's data is unchanged, and the refusal
// is counted with its reason.
func TestStrangerCannotWriteTheRaftLog(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	secretFile := filepath.Join(dir, "demo.member-secret")
	tokenFile := filepath.Join(dir, "token")
	for path, content := range map[string][]byte{secretFile: memberauth.NewSecret(), tokenFile: []byte("clients-only\n")} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mtls := func() *placement.TLS {
		return &placement.TLS{CA: pki.CA, Cert: pki.Cert, Key: pki.Key, ClientAuth: true, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey}
	}
	attackerTLS := func(cert, key string) func(t *testing.T, clientTLS *tls.Config) *tls.Config {
		return func(t *testing.T, clientTLS *tls.Config) *tls.Config {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			return &tls.Config{RootCAs: clientTLS.RootCAs, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"}
		}
	}
	cases := []struct {
		name     string
		security placement.Security
		attacker func(t *testing.T, clientTLS *tls.Config) *tls.Config // nil: plain TCP
		reason   string                                                // of umstore_raft_peers_refused_total
	}{
		{"the member secret alone", placement.Security{MemberSecretFile: secretFile}, nil, "protocol"},
		{"a client token", placement.Security{MemberSecretFile: secretFile, TokenFile: tokenFile}, nil, "protocol"},
		{"mutual TLS, a client certificate of the deployment's CA", placement.Security{MemberSecretFile: secretFile, TokenFile: tokenFile, TLS: mtls()},
			attackerTLS(pki.ClientCert, pki.ClientKey), "certificate"},
		{"mutual TLS, another host's store certificate", placement.Security{MemberSecretFile: secretFile, TLS: mtls()},
			attackerTLS(pki.ElsewhereCert, pki.ElsewhereKey), "certificate"},
		{"mutual TLS, the stores' own certificate on their host", placement.Security{MemberSecretFile: secretFile, TLS: mtls()},
			attackerTLS(pki.Cert, pki.Key), "protocol"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &placement.Deployment{Security: &tc.security}
			sec, err := cli.StoreSecurity(d)
			if err != nil {
				t.Fatal(err)
			}
			clientTLS, token, err := cli.ClientSecurity(d, cli.SecurityFlags{})
			if err != nil {
				t.Fatal(err)
			}
			c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) { cfg.Security = sec }})
			const n = 20
			publishSecure(t, c, clientTLS, token, "acked", n)
			for _, m := range c.Members(1) {
				c.WaitHeld(m.Name, "acked", n, 10*time.Second)
			}
			c.RequireSame(1, 10*time.Second)

			leader := c.WaitLeader(1, 10*time.Second)
			var follower storegroup.Member
			for _, m := range c.Members(1) {
				if m.Name != leader.Name() {
					follower = m
					break
				}
			}
			fs := c.Store(follower.Name)
			reg := prometheus.NewRegistry()
			reg.MustRegister(fs.Collector())
			me := map[string]string{"store": follower.Name}
			term := uint64(metricValue(t, reg, "umstore_raft_term", me))
			st := fs.Status()
			info, _, _ := fs.Repository().Source("acked")

			var attackerCfg *tls.Config
			if tc.attacker != nil {
				attackerCfg = tc.attacker(t, clientTLS)
			}
			appendErr, timeoutErr, success := forgeTrim(strangerTransport(t, attackerCfg), follower, st, term, "acked", info.HighSeq)
			if appendErr == nil || success {
				t.Errorf("the follower answered a stranger's AppendEntries (success %v, err %v)", success, appendErr)
			}
			if timeoutErr == nil {
				t.Errorf("the follower answered a stranger's TimeoutNow")
			}
			// The group's data is unchanged, and it still takes writes.
			publishSecure(t, c, clientTLS, token, "after", 5)
			for _, m := range c.Members(1) {
				c.WaitHeld(m.Name, "after", 5, 10*time.Second)
				got, ok, err := c.Store(m.Name).Repository().Source("acked")
				if err != nil || !ok || got.Count != n || got.HighSeq != info.HighSeq {
					t.Errorf("%s holds %+v of the acknowledged source (ok %v, err %v), want all %d messages", m.Name, got, ok, err, n)
				}
			}
			c.RequireSame(1, 10*time.Second)
			c.Eventually(5*time.Second, "both refusals are counted", func() bool {
				return metricValue(t, reg, "umstore_raft_peers_refused_total", map[string]string{"store": follower.Name, "reason": tc.reason}) >= 2
			})
		})
	}
}

// publishSecure publishes count messages to source with the given client
// security and waits until they are stable.
func publishSecure(t *testing.T, c *clustertest.Cluster, clientTLS *tls.Config, token, source string, count int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.TLS, cfg.Token = source, c.Addrs(), clientTLS, token
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < count; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("%s-%d", source, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// consumedAs acknowledges, for session, that receiver consumed source up to
// seq (0: a keep-alive), and fails the test unless the leader answers OK.
func (c *client) consumedAs(source, receiver, session string, seq uint64, leaving bool) {
	c.t.Helper()
	if got, ok := c.call(&wire.ConsumedAs{ReqID: 1, Source: source, Receiver: receiver, Session: session, Seq: seq, Leaving: leaving}).(*wire.OK); !ok {
		c.t.Fatalf("ConsumedAs %d by %s: %#v, want OK", seq, session, got)
	}
}

// A client that knows a durable receiver's name cannot move its position:
// an anonymous Consumed (frame 17) for a name a session registered is
// refused, while the receiver is registered and after it left, and
// nothing is proposed. With receiver-paced persistence the stores keep
// what the receiver has not consumed. On the code before receiver names
// were owned, the leader answered OK, the position jumped to 95 and the
// stores released messages 51-95, which the receiver never consumed. A
// name no session ever registered still takes an anonymous position.
func TestStrangerCannotMoveAReceiversPosition(t *testing.T) {
	t.Parallel()
	c := pacedCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := pacedPublisher(t, ctx, c, publisher.PacingBlocking)
	leader := c.WaitLeader(1, 30*time.Second)
	owner := dial(t, clientAddr(c, leader.Name()))
	reg, ok := owner.call(&wire.RegisterReceiver{ReqID: 1, Source: "paced", Receiver: "app1", Session: "app1-1", Paced: true}).(*wire.ReceiverRegistered)
	if !ok || !reg.Known {
		t.Fatalf("register app1: %#v", reg)
	}
	for i := 1; i <= pacedLimit; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	owner.consumedAs("paced", "app1", "app1-1", 50, false)
	if _, err := p.Send(ctx, []byte("over the limit")); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, "the stores release what app1 consumed", func() bool { return trimmedThrough(c, 1) == 50 })

	stranger := dial(t, clientAddr(c, leader.Name()))
	spoof := func(when string) {
		t.Helper()
		before := leader.Status().LastIndex
		got := stranger.call(&wire.Consumed{ReqID: 7, Source: "paced", Receiver: "app1", Seq: 95})
		e, ok := got.(*wire.Error)
		if !ok || e.Code != wire.CodeNotRegistered || e.ReqID != 7 || !strings.Contains(e.Message, "only that session records its consumption") {
			t.Fatalf("%s: an anonymous Consumed of app1 at 95 was answered %#v, want an Error %s saying only its session records its consumption", when, got, wire.CodeNotRegistered)
		}
		owner.consumedAs("paced", "app1", "app1-1", 0, false) // keep-alive
		time.Sleep(500 * time.Millisecond)                    // several retention checks
		if after := leader.Status().LastIndex; after != before {
			t.Logf("%s: the log grew by %d entries (the owner's keep-alive and housekeeping propose none of a position)", when, after-before)
		}
		for _, m := range c.Members(1) {
			pos, _, _, err := c.Store(m.Name).Repository().Receiver("paced", "app1")
			if err != nil || pos.Seq != 50 {
				t.Fatalf("%s: %s records app1 at %d (err %v), want 50", when, m.Name, pos.Seq, err)
			}
		}
		if got := trimmedThrough(c, 1); got != 50 {
			t.Fatalf("%s: the stores released the source through %d, want 50: the receiver consumed only 50", when, got)
		}
	}
	spoof("while app1 is registered")

	// Its own session moves it on; a goodbye frees the name, but the name
	// stays owned.
	owner.consumedAs("paced", "app1", "app1-1", 60, true)
	c.Eventually(10*time.Second, "app1's own acknowledgement is recorded", func() bool {
		pos, _, _, _ := leader.Repository().Receiver("paced", "app1")
		return pos.Seq == 60
	})
	got := stranger.call(&wire.Consumed{ReqID: 8, Source: "paced", Receiver: "app1", Seq: 95})
	if e, ok := got.(*wire.Error); !ok || e.Code != wire.CodeNotRegistered {
		t.Fatalf("after app1 left: an anonymous Consumed was answered %#v, want an Error %s", got, wire.CodeNotRegistered)
	}

	// A name no session registered: the anonymous form still records it.
	if got, ok := stranger.call(&wire.Consumed{ReqID: 9, Source: "paced", Receiver: "legacy", Seq: 10}).(*wire.OK); !ok {
		t.Fatalf("an anonymous Consumed of a never-registered name: %#v, want OK", got)
	}
	c.Eventually(10*time.Second, "legacy's position is recorded", func() bool {
		pos, _, _, _ := leader.Repository().Receiver("paced", "legacy")
		return pos.Seq == 10
	})
	if pos, _, _, _ := leader.Repository().Receiver("paced", "app1"); pos.Seq != 60 {
		t.Fatalf("app1 is at %d, want 60", pos.Seq)
	}
}

// A receiver that registered while the group did not hold its source is
// told to register again before its first position is recorded, so that
// every recorded position names the session that owns it (and an
// anonymous Consumed cannot take the name over once the leader forgets
// the session). On the code before, the position was recorded without a
// session.
func TestReceiverRegisteredBeforeItsSourceRegistersAgain(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := c.WaitLeader(1, 30*time.Second)
	rcv := dial(t, clientAddr(c, leader.Name()))
	register := func() *wire.ReceiverRegistered {
		t.Helper()
		reg, ok := rcv.call(&wire.RegisterReceiver{ReqID: 1, Source: "later", Receiver: "app1", Session: "app1-1"}).(*wire.ReceiverRegistered)
		if !ok {
			t.Fatalf("register app1: %#v", reg)
		}
		return reg
	}
	if reg := register(); reg.Known {
		t.Fatalf("registered with a source the group holds already: %#v", reg)
	}
	if err := c.PublishDirect(ctx, 1, "later", 1, [][]byte{[]byte("1"), []byte("2")}); err != nil {
		t.Fatal(err)
	}
	got := rcv.call(&wire.ConsumedAs{ReqID: 2, Source: "later", Receiver: "app1", Session: "app1-1", Seq: 2})
	if e, ok := got.(*wire.Error); !ok || e.Code != wire.CodeNotRegistered || !strings.Contains(e.Message, "again") {
		t.Fatalf("the first position after the source appeared: %#v, want an Error %s saying to register again", got, wire.CodeNotRegistered)
	}
	if reg := register(); !reg.Known {
		t.Fatalf("registered again: %#v, want the source known", reg)
	}
	rcv.consumedAs("later", "app1", "app1-1", 2, false)
	c.Eventually(10*time.Second, "the position is recorded with its session", func() bool {
		pos, _, _, _ := leader.Repository().Receiver("later", "app1")
		return pos.Seq == 2 && pos.Session == "app1-1"
	})
}

// ownerAs starts a publisher of source under UM session ID 0x1234.
func ownerAs(ctx context.Context, c *clustertest.Cluster, source string) (*publisher.Publisher, error) {
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.SessionID, cfg.RegisterTimeout = source, c.Addrs(), 0x1234, 300*time.Millisecond
	return publisher.New(ctx, cfg)
}

// sendStable sends "owner N" for N in from..to through p and waits until
// they are stable.
func sendStable(t *testing.T, ctx context.Context, p *publisher.Publisher, from, to uint64) {
	t.Helper()
	for n := from; n <= to; n++ {
		if seq, err := p.Send(ctx, []byte(fmt.Sprintf("owner %d", n))); err != nil || seq != n {
			t.Fatalf("send %d: got %d, %v", n, seq, err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// No client can strand a source. A stranger who knows the owner's static
// session ID registers with the last epoch: refused, and the owner goes on.
// With an epoch the stores allow it takes the source over (its identity is
// not a secret), but a Publish at the ceiling, or anywhere far past the
// source's highest, is refused. Once it goes silent the owner's restart
// registers, resumes right after its own messages, and they are stable. On
// the code before, the last epoch fenced the owner, the Publish at 2^53-1
// was stored, and every later registration of the owner failed with "the
// source has used every sequence number".
func TestStrangerCannotStrandASource(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.SourceActivityTimeout = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := ownerAs(ctx, c, "victim")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	sendStable(t, ctx, p, 1, 5)
	leader := c.WaitLeader(1, 30*time.Second)
	stranger := dial(t, clientAddr(c, leader.Name()))

	got := stranger.call(&wire.Register{ReqID: 1, Source: "victim", Session: "session-id:0x0000000000001234#18446744073709551615"})
	if e, ok := got.(*wire.Error); !ok || e.Code != wire.CodeBadRequest || !strings.Contains(e.Message, "check the publisher host's clock") {
		t.Fatalf("a registration with the last epoch was answered %#v, want an Error %s about the epoch", got, wire.CodeBadRequest)
	}
	sendStable(t, ctx, p, 6, 6) // the owner was not fenced

	ahead := time.Now().Add(5 * time.Minute).UnixNano()
	if r, ok := stranger.call(&wire.Register{ReqID: 2, Source: "victim", Session: fmt.Sprintf("session-id:0x0000000000001234#%d", ahead)}).(*wire.Registered); !ok || r.HighSeq != 6 {
		t.Fatalf("a registration with an epoch the stores allow: %#v, want Registered at 6", r)
	}
	for i, first := range []uint64{wire.MaxSeq, 6 + 1 + (1 << 20) + 1, 1 << 40} {
		reqID := uint64(10 + i)
		got := stranger.call(&wire.Publish{ReqID: reqID, Source: "victim", FirstSeq: first, Payloads: [][]byte{[]byte("stranger")}})
		if e, ok := got.(*wire.Error); !ok || e.Code != wire.CodeBadRequest || e.ReqID != reqID || !strings.Contains(e.Message, "Publish from 7 on") {
			t.Fatalf("a Publish at %d was answered %#v, want an Error %s saying where the source may go on", first, got, wire.CodeBadRequest)
		}
	}
	stranger.c.Close() // silent from now on
	p.Close()          // fenced by the stranger's registration

	c.Eventually(20*time.Second, "the owner registers again once the stranger is silent", func() bool {
		short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
		defer cancelShort()
		var err error
		p, err = ownerAs(short, c, "victim")
		return err == nil
	})
	if got := p.FirstSeq(); got != 7 {
		t.Fatalf("the owner resumed at %d, want 7", got)
	}
	sendStable(t, ctx, p, 7, 9)
	var want []string
	for i := 1; i <= 9; i++ {
		want = append(want, fmt.Sprintf("%d owner %d", i, i))
	}
	for name, held := range heldPayloads(t, c, "victim", 9) {
		if !reflect.DeepEqual(held, want) {
			t.Fatalf("%s holds %q, want %q", name, held, want)
		}
	}
}
