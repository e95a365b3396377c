package publisher_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/quorum"
	"umstore/receiver"
)

func newPublisher(t *testing.T, c *clustertest.Cluster, source string, tune func(*publisher.Config)) *publisher.Publisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source = source
	cfg.Groups = c.Addrs()
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("new publisher: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func payload(seq uint64) []byte { return []byte(fmt.Sprintf("message %d", seq)) }

// readAll reads 1..to back through the receiver SDK and checks order,
// uniqueness and content.
func readAll(t *testing.T, c *clustertest.Cluster, source string, group int, to uint64) {
	t.Helper()
	// A group acknowledges a moment before its leader's repository serves
	// what it acknowledged (the early answer): wait for that first.
	c.Eventually(30*time.Second, fmt.Sprintf("a leader serves %q through %d", source, to), func() bool {
		for g := 1; g <= len(c.Addrs()); g++ {
			if group != 0 && g != group {
				continue
			}
			if l := c.Leader(g); l != nil {
				if info, ok, err := l.Repository().Source(source); err == nil && ok && info.HighSeq >= to {
					return true
				}
			}
		}
		return false
	})
	cfg := receiver.DefaultConfig()
	cfg.Source = source
	cfg.Groups = c.Addrs()
	cfg.Group = group
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := uint64(1)
	err = r.Read(ctx, 1, to, func(m receiver.Message) error {
		if m.Seq != want {
			return fmt.Errorf("got seq %d, want %d (out of order or duplicate)", m.Seq, want)
		}
		if string(m.Payload) != string(payload(m.Seq)) {
			return fmt.Errorf("seq %d: payload %q", m.Seq, m.Payload)
		}
		want++
		return nil
	})
	if err != nil {
		t.Fatalf("read back 1..%d (group %d): %v", to, group, err)
	}
	if want != to+1 {
		t.Fatalf("read back %d messages, want %d", want-1, to)
	}
}

// The vertical slice's headline test: two groups, intergroup any, 10,000
// messages, one group's leader killed mid-stream. Every message becomes
// stable, stability is reported in order, and everything reads back in
// order without duplicates, from both groups.
func TestPublishThroughLeaderKill(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	const n = 10000
	var mu sync.Mutex
	var next uint64 = 1
	var orderErr error
	p := newPublisher(t, c, "orders", func(cfg *publisher.Config) {
		cfg.OnStable = func(first, last uint64) {
			mu.Lock()
			defer mu.Unlock()
			if first != next && orderErr == nil {
				orderErr = fmt.Errorf("stability jumped from %d to %d", next, first)
			}
			next = last + 1
		}
	})
	if p.FirstSeq() != 1 {
		t.Fatalf("first sequence of a new source = %d, want 1", p.FirstSeq())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	killed := ""
	for i := uint64(1); i <= n; i++ {
		seq, err := p.Send(ctx, payload(i))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if seq != i {
			t.Fatalf("send %d got sequence %d", i, seq)
		}
		if i == n/2 {
			l := c.WaitLeader(1, 30*time.Second)
			killed = l.Name()
			c.Kill(killed)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (stats %+v)", err, p.Stats())
	}
	mu.Lock()
	if next != n+1 {
		t.Fatalf("Flush returned before OnStable reported everything: reported through %d of %d", next-1, n)
	}
	mu.Unlock()
	// With the killed store's group back to two members, both groups still
	// have quorum: every group gets every message.
	if err := p.WaitAllGroups(ctx); err != nil {
		t.Fatalf("wait for both groups: %v (stats %+v)", err, p.Stats())
	}
	mu.Lock()
	if orderErr != nil || next != n+1 {
		t.Fatalf("stability delivery: %v, next %d", orderErr, next)
	}
	mu.Unlock()
	st := p.Stats()
	t.Logf("killed %s; stats %+v", killed, st)
	if st.ForcedReleases != 0 {
		t.Fatalf("%d messages were released before every group had them", st.ForcedReleases)
	}
	readAll(t, c, "orders", 0, n)
	readAll(t, c, "orders", 1, n)
	readAll(t, c, "orders", 2, n)
}

// A publisher restarted on the same source resumes after the highest
// sequence number any group holds.
func TestRestartedPublisherResumes(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newPublisher(t, c, "s", nil)
	for i := uint64(1); i <= 100; i++ {
		if _, err := p.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p2 := newPublisher(t, c, "s", nil)
	if got := p2.FirstSeq(); got != 101 {
		t.Fatalf("restarted publisher resumes at %d, want 101", got)
	}
	seq, err := p2.Send(ctx, payload(101))
	if err != nil || seq != 101 {
		t.Fatalf("send after restart: seq %d, %v", seq, err)
	}
	if err := p2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	readAll(t, c, "s", 0, 101)
	// Another source is independent.
	if q := newPublisher(t, c, "other", nil); q.FirstSeq() != 1 {
		t.Fatalf("a new source starts at %d, want 1", q.FirstSeq())
	}
}

// With one whole group down, intergroup any keeps publishing; all refuses
// to call anything stable.
func TestIntergroupBehaviourWithAGroupDown(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pAny := newPublisher(t, c, "any", func(cfg *publisher.Config) { cfg.RegisterTimeout = 500 * time.Millisecond })
	for i := uint64(1); i <= 50; i++ {
		if _, err := pAny.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pAny.Flush(ctx); err != nil {
		t.Fatalf("any with one group up: %v", err)
	}

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Intergroup, cfg.RegisterTimeout = "all", c.Addrs(), quorum.All, 500*time.Millisecond
	_, err := publisher.New(short, cfg)
	if !errors.Is(err, publisher.ErrRegistration) {
		t.Fatalf("intergroup all with a group down: New = %v, want ErrRegistration", err)
	}
}

// With FlightRefuse, Send refuses once FlightSize messages are unstable.
func TestFlightSizeRefuse(t *testing.T) {
	t.Parallel()
	c2 := clustertest.Start(t, 2, nil)
	p := newPublisher(t, c2, "f", func(cfg *publisher.Config) {
		cfg.FlightSize = 3
		cfg.Flight = publisher.FlightRefuse
	})
	for _, g := range []int{1, 2} {
		for _, m := range c2.Members(g) {
			c2.Kill(m.Name)
		}
	}
	ctx := context.Background()
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = p.Send(ctx, []byte("x"))
	}
	if !errors.Is(err, publisher.ErrFlightFull) {
		t.Fatalf("Send with every group down and FlightRefuse = %v, want ErrFlightFull", err)
	}
}

// The window that remains with intergroup any: a message stable in only one
// group is unknown to a publisher that can reach only the other group. The
// state file closes it for a publisher restarted on the same machine.
func TestStateFileResumesPastWhatOnlyAnUnreachableGroupHolds(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "orders.state")
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	p := newPublisher(t, c, "orders", func(cfg *publisher.Config) {
		cfg.StateFile, cfg.RegisterTimeout = state, 300*time.Millisecond
	})
	for i := uint64(1); i <= 100; i++ {
		if _, err := p.Send(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	// Now only group 2 (which never saw the source) is reachable.
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	for _, m := range c.Members(2) {
		c.StartStore(m.Name)
	}
	c.WaitLeader(2, 30*time.Second)

	without := newPublisher(t, c, "orders", func(cfg *publisher.Config) { cfg.RegisterTimeout = 300 * time.Millisecond })
	if got := without.FirstSeq(); got != 1 {
		t.Fatalf("without a state file the publisher resumed at %d; this test expects the known window (1)", got)
	}
	without.Close()
	with := newPublisher(t, c, "orders", func(cfg *publisher.Config) {
		cfg.StateFile, cfg.RegisterTimeout = state, 300*time.Millisecond
	})
	if got := with.FirstSeq(); got != 101 {
		t.Fatalf("with the state file the publisher resumed at %d, want 101", got)
	}
	reg := with.Registration()
	if reg.StateFileSeq != 100 || reg.ResumeSeq != 101 || reg.Groups[0].Answered || !reg.Groups[1].Answered {
		t.Fatalf("registration report %+v", reg)
	}
}

// With a state file no message leaves before the file bounds its sequence
// number (stateFile.SentUpTo): a later incarnation that cannot reach every
// group resumes past the bound. Chaos seed 1209, schedule 110: a killed
// publisher's last two messages, committed by a group whose acknowledgement
// never came back, were given second payloads by the next incarnation,
// which reached only the other group.
func TestStateFileBoundsWhatWasSentBeforeItIsSent(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "orders.state")
	sentUpTo := func() uint64 {
		b, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			SentUpTo uint64 `json:"sent_up_to"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		return f.SentUpTo
	}
	p := newPublisher(t, c, "orders", func(cfg *publisher.Config) { cfg.StateFile = state })
	const n = 20000
	for i := uint64(1); i <= n; i++ {
		seq, err := p.Send(ctx, payload(i))
		if err != nil {
			t.Fatal(err)
		}
		if i%250 == 0 || i == 1 {
			if b := sentUpTo(); b < seq {
				t.Fatalf("message %d was handed to the groups, but the state file bounds what was sent at %d", seq, b)
			}
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b := sentUpTo(); b != n {
		t.Fatalf("after Close the state file bounds what was sent at %d, want %d (what was sent)", b, n)
	}

	// The next incarnation sends to group 1 alone (group 2 down) and is
	// never closed, as if it crashed; the one after it reaches group 2
	// alone, which holds none of that: it resumes past the bound, not
	// where group 2 (or the last stable number) would put it.
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	p2 := newPublisher(t, c, "orders", func(cfg *publisher.Config) {
		cfg.StateFile, cfg.RegisterTimeout = state, 300*time.Millisecond
	})
	for i := uint64(1); i <= 10; i++ {
		if _, err := p2.Send(ctx, payload(n+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
	}
	for _, m := range c.Members(2) {
		c.StartStore(m.Name)
	}
	c.WaitLeader(2, 30*time.Second)
	bound := sentUpTo()
	p3 := newPublisher(t, c, "orders", func(cfg *publisher.Config) {
		cfg.StateFile, cfg.RegisterTimeout = state, 300*time.Millisecond
	})
	if got := p3.FirstSeq(); bound <= n+10 || got != bound+1 {
		t.Fatalf("with only group 2 reachable the publisher resumed at %d; want past the bound %d (above the last message sent, %d)", got, bound, n+10)
	}
}
