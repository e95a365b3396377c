package publisher_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

// Two groups hold the source at different heights (group 1 up to 30, group
// 2 up to 80), and the lower group answers the registration first: the new
// publisher must resume past the higher one (SPEC §4 rule 2), not past
// whichever group answered first. Repair is off so group 1 stays behind.
func TestResumePastTheHigherGroupWhenTheLowerAnswersFirst(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) { cfg.RepairInterval = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for g, high := range []uint64{30, 80} {
		publishRaw(ctx, t, c, g+1, "s", high)
	}
	// Group 2 is away while the publisher registers, so group 1 answers
	// first; group 2 comes back within RegisterTimeout.
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	type result struct {
		p   *publisher.Publisher
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg := publisher.DefaultConfig()
		cfg.Source, cfg.Groups, cfg.Session, cfg.RegisterTimeout = "s", c.Addrs(), "resumer", 30*time.Second
		p, err := publisher.New(ctx, cfg)
		done <- result{p, err}
	}()
	c.Eventually(10*time.Second, "group 1 records the publisher's registration", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, _, _ := l.Repository().Source("s")
		return strings.HasPrefix(info.Session, "resumer#") // the identity, and this incarnation's epoch
	})
	for _, m := range c.Members(2) {
		c.StartStore(m.Name)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("registration did not finish once group 2 was back")
	}
	if r.err != nil {
		t.Fatalf("register: %v", r.err)
	}
	p := r.p
	defer p.Close()
	reg := p.Registration()
	if !reg.Groups[0].Answered || !reg.Groups[1].Answered || reg.Groups[0].HighSeq != 30 || reg.Groups[1].HighSeq != 80 {
		t.Fatalf("registration report %+v, want both groups answered, at 30 and 80", reg)
	}
	if got := p.FirstSeq(); got != 81 {
		t.Fatalf("resumed at %d, want 81: one past the higher group (group 1, at 30, answered first)", got)
	}
	if seq, err := p.Send(ctx, payload(81)); err != nil || seq != 81 {
		t.Fatalf("send after resuming: seq %d, %v", seq, err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// publishRaw stores messages 1..high of source in one group directly, as an
// earlier publisher that reached only that group would have.
func publishRaw(ctx context.Context, t *testing.T, c *clustertest.Cluster, group int, source string, high uint64) {
	t.Helper()
	payloads := make([][]byte, high)
	for i := range payloads {
		payloads[i] = payload(uint64(i + 1))
	}
	if err := c.PublishDirect(ctx, group, source, 1, payloads); err != nil {
		t.Fatalf("publish 1..%d to group %d: %v", high, group, err)
	}
}
