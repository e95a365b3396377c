package storegroup_test

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/cli"
	"umstore/internal/clustertest"
	"umstore/internal/memberauth"
	"umstore/internal/testmain"
	"umstore/placement"
	"umstore/storegroup"
)

// memberSecurity returns store security with a fresh member secret, and
// the secret.
func memberSecurity(t *testing.T) (storegroup.Security, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.member-secret")
	if err := os.WriteFile(path, memberauth.NewSecret(), 0o600); err != nil {
		t.Fatal(err)
	}
	sec, err := cli.StoreSecurity(&placement.Deployment{Security: &placement.Security{MemberSecretFile: path}})
	if err != nil {
		t.Fatal(err)
	}
	return sec, sec.MemberSecret
}

// readUntilClosed reads from c until the other end closes it or limit passes,
// and returns how long that took (limit if it stayed open).
func readUntilClosed(c net.Conn, limit time.Duration) time.Duration {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	buf := make([]byte, 256)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return limit
			}
			return time.Since(start)
		}
	}
}

// A stranger that dials the raft port and trickles raft's own framing, an
// AppendEntries whose first map key is a 1 MiB string sent one byte every
// 200ms, is cut at the handshake deadline (5 s by default), not kept for
// as long as it keeps sending (raft's handler has no deadline: before
// members authenticated, it waited for the rest forever); the cut is
// counted.
func TestRaftPortCutsASlowStranger(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	sec, _ := memberSecurity(t)
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) { cfg.Security = sec }})
	target := c.Members(1)[1]
	conn, err := net.Dial("tcp", target.RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// rpcAppendEntries, a map of one entry, a str32 key of 1 MiB.
		trickle := append([]byte{0x00, 0x81, 0xdb, 0x00, 0x10, 0x00, 0x00}, bytes.Repeat([]byte{'a'}, 100)...)
		for _, b := range trickle {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	took := readUntilClosed(conn, 12*time.Second)
	if took < 4*time.Second || took > 8*time.Second {
		t.Fatalf("a stranger sending a byte every 200ms was cut after %v, want about the 5s handshake deadline", took)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Store(target.Name).Collector())
	c.Eventually(2*time.Second, "the cut is counted", func() bool {
		return metricValue(t, reg, "umstore_raft_peers_refused_total", map[string]string{"store": target.Name, "reason": "timeout"}) == 1
	})
}

// raftLogLines collects the stores' logs.
type raftLogLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *raftLogLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *raftLogLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A member's raft connection on which nothing arrives for RaftIdleTimeout
// is closed. raft's own connections survive it: a leader that loses its
// leadership keeps its connections to the others in raft's pool, idle;
// the acceptors close them; when it is elected again, raft takes them out
// of the pool for its votes and heartbeats and finds them replaced, with no
// failed RPC (a lost vote, a failed heartbeat) in raft's log.
func TestIdleRaftConnectionsAreClosedAndRaftCarriesOn(t *testing.T) {
	t.Parallel()
	sec, secret := memberSecurity(t)
	const idle = 600 * time.Millisecond
	var logs raftLogLines
	c := clustertest.New(t, clustertest.Options{
		Groups: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Tune: func(cfg *storegroup.Config) {
			cfg.Security = sec
			cfg.RaftIdleTimeout = idle
		},
	})
	publishSecure(t, c, nil, "", "before", 50)

	// A member that proves itself, then says nothing, is cut after idle.
	target := c.Members(1)[1]
	conn, err := net.Dial("tcp", target.RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := memberauth.Dial(conn, memberauth.Config{Secret: secret, Self: c.Members(1)[0].Name}); err != nil {
		t.Fatalf("a member's handshake: %v", err)
	}
	if took := readUntilClosed(conn, 10*idle); took < idle/2 || took >= 10*idle {
		t.Fatalf("an idle member connection was closed after %v, want about %v", took, idle)
	}

	// Leadership moves away; the old leader's pooled connections go idle
	// until the acceptors close them; then leadership comes back.
	old := c.WaitLeader(1, 10*time.Second)
	var next storegroup.Member
	var oldMember storegroup.Member
	for _, m := range c.Members(1) {
		if m.Name == old.Name() {
			oldMember = m
		} else if next.Name == "" {
			next = m
		}
	}
	cuts := strings.Count(logs.String(), "closed a connection on which nothing arrived")
	if err := old.TransferLeadership(next); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, "the old leader's idle connections are closed by the others", func() bool {
		return strings.Count(logs.String(), "closed a connection on which nothing arrived") >= cuts+2
	})
	mark := len(logs.String())
	if err := c.WaitLeader(1, 10*time.Second).TransferLeadership(oldMember); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, "the old leader leads again", func() bool { return c.Leader(1) != nil && c.Leader(1).Name() == oldMember.Name })
	publishSecure(t, c, nil, "", "after", 50)
	for _, m := range c.Members(1) {
		c.WaitHeld(m.Name, "after", 50, 10*time.Second)
	}
	c.RequireSame(1, 10*time.Second)
	since := logs.String()[mark:]
	for _, bad := range []string{"failed to make requestVote RPC", "failed to pipeline", "failed to appendEntries", "failed to heartbeat", "failed to decode incoming command", "failed to flush response"} {
		if strings.Contains(since, bad) {
			t.Errorf("raft logged %q: an idle cut reached raft", bad)
		}
	}
	if t.Failed() {
		t.Logf("logs since leadership came back:\n%s", since)
	}
}
