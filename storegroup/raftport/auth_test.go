package raftport

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/testpki"
)

var (
	testSecret  = bytes.Repeat([]byte{0x42}, 32)
	otherSecret = bytes.Repeat([]byte{0x24}, 32)
)

// security is a store's TLS configurations and member secret in a test,
// as storegroup.Security holds them.
type security struct {
	ServerTLS    *tls.Config
	ClientTLS    *tls.Config
	MemberSecret []byte
}

// raftPort is one store's raft stream layer in a test, with its refusal
// counts.
type raftPort struct {
	*streamLayer
	refused *[NumRefusals]atomic.Uint64
}

func (p raftPort) count(r Refusal) uint64 { return p.refused[r].Load() }

// testGroup is group 1 of three members: G1S1 and G1S2 on 127.0.0.1,
// G1S3 on 127.0.0.2 (the raft addresses of those not listening are
// placeholders; the acceptor only needs their hosts).
func testGroup(addrs map[string]string) []Member {
	def := map[string]string{"G1S1": "127.0.0.1:1", "G1S2": "127.0.0.1:2", "G1S3": "127.0.0.2:3"}
	var out []Member
	for _, n := range []string{"G1S1", "G1S2", "G1S3"} {
		a := def[n]
		if addrs[n] != "" {
			a = addrs[n]
		}
		out = append(out, Member{Name: n, RaftAddr: a, ClientAddr: a})
	}
	return out
}

// openRaftPort starts the stream layer of store name with the given
// members and security, listening on bind.
func openRaftPort(t *testing.T, name, bind string, members []Member, sec security, handshake, idle time.Duration) raftPort {
	t.Helper()
	refused := &[NumRefusals]atomic.Uint64{}
	cfg := Config{Name: name, Group: 1, Members: members, MemberSecret: sec.MemberSecret}
	host, _, _ := net.SplitHostPort(bind)
	sl, err := newStreamLayer(streamOptions{
		bind:             bind,
		localIP:          net.ParseIP(host),
		serverTLS:        sec.ServerTLS,
		clientTLS:        sec.ClientTLS,
		auth:             newMemberCheck(cfg),
		log:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		refused:          func(r Refusal) { refused[r].Add(1) },
		handshakeTimeout: handshake,
		idleTimeout:      idle,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sl.Close() })
	return raftPort{sl, refused}
}

// acceptOne waits for the next connection raft would be handed.
func acceptOne(t *testing.T, p raftPort, within time.Duration) (net.Conn, error) {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := p.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-time.After(within):
		p.Close() // unblocks the Accept above
		<-ch
		return nil, errors.New("no connection was handed to raft")
	}
}

// tlsConfigs returns a store's server and client TLS configurations with
// the certificate cert/key, trusting pki's CA.
func tlsConfigs(t *testing.T, pki testpki.Files, cert, key string) security {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return security{
		ServerTLS: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, MinVersion: tls.VersionTLS12},
		ClientTLS: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	}
}

// Each way of failing to prove membership is refused before raft sees the
// connection, and counted under its reason; a real member passes.
func TestRaftPortRefusals(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	store := tlsConfigs(t, pki, pki.Cert, pki.Key)
	withSecret := func(s security, secret []byte) security { s.MemberSecret = secret; return s }
	cases := []struct {
		name     string
		acceptor security
		dialer   security
		as, from string  // the dialer's name and source address
		want     Refusal // -1: accepted
	}{
		{"a member, plain TCP", withSecret(security{}, testSecret), withSecret(security{}, testSecret), "G1S1", "127.0.0.1", -1},
		{"a member, TLS", withSecret(store, testSecret), withSecret(store, testSecret), "G1S3", "127.0.0.2", -1},
		{"TLS without a secret: certificate and address suffice", store, store, "G1S1", "127.0.0.1", -1},
		{"another secret", withSecret(security{}, testSecret), withSecret(security{}, otherSecret), "G1S1", "127.0.0.1", refusedSecret},
		{"a store of another group", withSecret(security{}, testSecret), withSecret(security{}, testSecret), "G2S1", "127.0.0.1", refusedNotMember},
		{"a name whose host is elsewhere", withSecret(store, testSecret), withSecret(store, testSecret), "G1S3", "127.0.0.1", refusedAddress},
		{"from no member's host", withSecret(store, testSecret), withSecret(store, testSecret), "G1S1", "127.0.0.9", refusedAddress},
		{"a client certificate", withSecret(store, testSecret), withSecret(tlsConfigs(t, pki, pki.ClientCert, pki.ClientKey), testSecret), "G1S1", "127.0.0.1", refusedCertificate},
		{"another host's store certificate", store, tlsConfigs(t, pki, pki.ElsewhereCert, pki.ElsewhereKey), "G1S1", "127.0.0.1", refusedCertificate},
		{"no certificate", withSecret(store, testSecret), withSecret(security{ClientTLS: &tls.Config{RootCAs: store.ClientTLS.RootCAs}}, testSecret), "G1S1", "127.0.0.1", refusedTLS},
		{"another CA's certificate", store, tlsConfigs(t, pki, pki.OtherCert, pki.OtherKey), "G1S1", "127.0.0.1", refusedTLS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acc := openRaftPort(t, "G1S2", "127.0.0.1:0", testGroup(nil), tc.acceptor, 2*time.Second, time.Minute)
			members := testGroup(map[string]string{"G1S2": acc.Addr().String()})
			if tc.as == "G2S1" {
				members[0].Name = "G2S1"
			}
			dial := openRaftPort(t, tc.as, tc.from+":0", members, tc.dialer, 2*time.Second, time.Minute)
			dc, dialErr := dial.Dial(raft.ServerAddress(acc.Addr().String()), 2*time.Second)
			if tc.want < 0 {
				if dialErr != nil {
					t.Fatalf("a member's dial: %v", dialErr)
				}
				defer dc.Close()
				ac, err := acceptOne(t, acc, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer ac.Close()
				if _, err := dc.Write([]byte{0}); err != nil {
					t.Fatal(err)
				}
				var b [1]byte
				if _, err := io.ReadFull(ac, b[:]); err != nil {
					t.Fatalf("raft's end reads nothing: %v", err)
				}
				return
			}
			if dialErr == nil {
				// Some TLS refusals surface at the first read.
				_ = dc.SetReadDeadline(time.Now().Add(2 * time.Second))
				if _, err := dc.Read(make([]byte, 1)); err == nil {
					t.Fatal("the refused dialer read data")
				}
				dc.Close()
			}
			deadline := time.Now().Add(3 * time.Second)
			for acc.count(tc.want) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			for r := range NumRefusals {
				want := uint64(0)
				if r == tc.want {
					want = 1
				}
				if got := acc.count(r); got != want {
					t.Errorf("refusals for %s: %d, want %d", r, got, want)
				}
			}
		})
	}
}

// Silent connections do not hold up a member: pending handshakes are
// bounded per remote address (the next one is refused at once) and in
// all, and a member from another host still gets through meanwhile.
func TestPendingHandshakesAreBounded(t *testing.T) {
	acc := openRaftPort(t, "G1S2", "127.0.0.1:0", testGroup(nil), security{MemberSecret: testSecret}, 20*time.Second, time.Minute)
	silent := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", acc.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	waitPending := func(n int) {
		deadline := time.Now().Add(3 * time.Second)
		for {
			acc.mu.Lock()
			got := len(acc.open)
			acc.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d handshakes pending, want %d", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i := 0; i < maxPendingPerRemoteHost; i++ {
		silent("127.0.0.1")
	}
	waitPending(maxPendingPerRemoteHost)
	extra := silent("127.0.0.1")
	if took := timeToClose(extra, 3*time.Second); took >= 3*time.Second {
		t.Fatal("a connection beyond the per-address bound was kept")
	}
	if acc.count(refusedBusy) != 1 {
		t.Fatalf("busy refusals: %d, want 1", acc.count(refusedBusy))
	}

	// A member on another host is not held up.
	members := testGroup(map[string]string{"G1S2": acc.Addr().String()})
	member := openRaftPort(t, "G1S3", "127.0.0.2:0", members, security{MemberSecret: testSecret}, 2*time.Second, time.Minute)
	dc, err := member.Dial(raft.ServerAddress(acc.Addr().String()), 2*time.Second)
	if err != nil {
		t.Fatalf("a member behind %d silent connections: %v", maxPendingPerRemoteHost, err)
	}
	dc.Close()
	ac, err := acceptOne(t, acc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ac.Close()

	// Fill the port from other addresses up to its bound.
	for i := maxPendingPerRemoteHost; i < maxPendingHandshakes; i++ {
		silent(net.IPv4(127, 0, 0, byte(4+i/maxPendingPerRemoteHost)).String())
	}
	waitPending(maxPendingHandshakes)
	if took := timeToClose(silent("127.0.0.250"), 3*time.Second); took >= 3*time.Second {
		t.Fatal("a connection beyond the port's bound was kept")
	}
	if acc.count(refusedBusy) != 2 {
		t.Fatalf("busy refusals: %d, want 2", acc.count(refusedBusy))
	}
}

// timeToClose reads c until the other end closes it, or limit.
func timeToClose(c net.Conn, limit time.Duration) time.Duration {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return limit
		}
	}
	return time.Since(start)
}

// A connection the dialer has not written on for quiet is replaced, with a
// fresh handshake, before the next write; not while raft waits for an
// answer on it.
func TestDialedConnReplacesAQuietConnection(t *testing.T) {
	acc := openRaftPort(t, "G1S2", "127.0.0.1:0", testGroup(nil), security{MemberSecret: testSecret}, 2*time.Second, time.Minute)
	members := testGroup(map[string]string{"G1S2": acc.Addr().String()})
	dial := openRaftPort(t, "G1S1", "127.0.0.1:0", members, security{MemberSecret: testSecret}, 2*time.Second, time.Minute)
	nc, err := dial.Dial(raft.ServerAddress(acc.Addr().String()), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	dc := nc.(*dialedConn)
	first, err := acceptOne(t, acc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	quietFor := func() {
		dc.mu.Lock()
		dc.lastWrite = time.Now().Add(-time.Hour)
		dc.mu.Unlock()
	}
	read := func(c net.Conn, want string) {
		t.Helper()
		buf := make([]byte, len(want))
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}

	// While a read waits for an answer, nothing is replaced.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2)
		_, _ = io.ReadFull(dc, buf)
	}()
	waitFor(t, func() bool { dc.mu.Lock(); defer dc.mu.Unlock(); return dc.reading == 1 })
	quietFor()
	if _, err := dc.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	read(first, "q")
	if _, err := first.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	// Quiet and no read waiting: the next write goes on a new connection.
	quietFor()
	if _, err := dc.Write([]byte("r")); err != nil {
		t.Fatal(err)
	}
	second, err := acceptOne(t, acc, 2*time.Second)
	if err != nil {
		t.Fatalf("no new connection after a quiet spell: %v", err)
	}
	defer second.Close()
	read(second, "r")
	_ = first.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the replaced connection: %v, want it closed", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// One line per remote address per refusalLogEvery, however many
// refusals; every refusal is counted.
func TestRefusalLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	var counted atomic.Int64
	l := newRefusalLog(slog.New(slog.NewTextHandler(&buf, nil)), func(Refusal) { counted.Add(1) })
	a := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1000}
	b := &net.TCPAddr{IP: net.ParseIP("192.0.2.8"), Port: 1000}
	for i := 0; i < 100; i++ {
		a.Port++
		l.refuse(a, refusedProtocol, errors.New("not a member handshake"))
	}
	l.refuse(b, refusedTimeout, errors.New("silent"))
	if n := strings.Count(buf.String(), "refused a raft connection"); n != 2 {
		t.Fatalf("%d lines for 101 refusals from 2 addresses, want 2:\n%s", n, buf.String())
	}
	if counted.Load() != 101 {
		t.Fatalf("counted %d refusals, want 101", counted.Load())
	}
	for _, want := range []string{"remote=192.0.2.7:1001", "reason=protocol", "remote=192.0.2.8:1000", "reason=timeout"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, buf.String())
		}
	}
	// The next line for a, once due, says how many were not logged.
	l.last["192.0.2.7"].logged = time.Now().Add(-refusalLogEvery)
	l.refuse(a, refusedProtocol, errors.New("again"))
	if !strings.Contains(buf.String(), "refused_since_last_line=99") {
		t.Errorf("the next line does not count the 99 refusals in between:\n%s", buf.String())
	}
}

// The raft port lets a member that moved speak only from its new host,
// with or without TLS: its old incarnation, should it come back at the
// old address, is refused; the new one is accepted.
func TestMovedMemberIsRefusedFromItsOldHost(t *testing.T) {
	sec := security{MemberSecret: testSecret}
	// G1S3 lived on 127.0.0.2 and moved to 127.0.0.3.
	members := testGroup(nil)
	movedTo := []Member{}
	for _, m := range members {
		if m.Name == "G1S3" {
			m.RaftAddr, m.ClientAddr = "127.0.0.3:3", "127.0.0.3:3"
		}
		movedTo = append(movedTo, m)
	}
	refused := &[NumRefusals]atomic.Uint64{}
	check := newMemberCheck(Config{Name: "G1S2", Group: 1, Members: members, MemberSecret: sec.MemberSecret,
		Current: func() []Member { return movedTo }})
	acc, err := newStreamLayer(streamOptions{
		bind: "127.0.0.1:0", localIP: net.ParseIP("127.0.0.1"), serverTLS: sec.ServerTLS, clientTLS: sec.ClientTLS, auth: check,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), refused: func(r Refusal) { refused[r].Add(1) },
		handshakeTimeout: 2 * time.Second, idleTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	port := raftPort{acc, refused}
	dialerGroup := testGroup(map[string]string{"G1S2": acc.Addr().String()})

	old := openRaftPort(t, "G1S3", "127.0.0.2:0", dialerGroup, sec, 2*time.Second, time.Minute)
	if c, err := old.Dial(raft.ServerAddress(acc.Addr().String()), 2*time.Second); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("the old incarnation's connection was served")
		}
		c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for port.count(refusedAddress) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if port.count(refusedAddress) != 1 {
		t.Fatalf("address refusals: %d, want 1", port.count(refusedAddress))
	}

	moved := openRaftPort(t, "G1S3", "127.0.0.3:0", dialerGroup, sec, 2*time.Second, time.Minute)
	dc, err := moved.Dial(raft.ServerAddress(acc.Addr().String()), 2*time.Second)
	if err != nil {
		t.Fatalf("the new incarnation's dial: %v", err)
	}
	defer dc.Close()
	ac, err := acceptOne(t, port, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ac.Close()
}
