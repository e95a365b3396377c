package deploystatus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/wire"
)

// testLimits are the status page's limits.
var testLimits = Limits{ProbeTimeout: time.Second, RoundTimeout: 3 * time.Second, Parallel: 8, Reuse: time.Second}

// fakeStores answers probes from a table, counting calls and the most
// probes in flight at once.
type fakeStores struct {
	delay    time.Duration
	mu       sync.Mutex
	replies  map[string]*wire.ProbeReply // by client address; missing: down
	calls    atomic.Int64
	inFlight atomic.Int64
	most     atomic.Int64
	sources  atomic.Int64
}

func (f *fakeStores) probe(ctx context.Context, addr string) (*wire.ProbeReply, error) {
	f.calls.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rep, ok := f.replies[addr]; ok {
		return rep, nil
	}
	return nil, errors.New("connection refused")
}

// probeFunc adapts probe to the prober's probe, which also returns the
// store's Pong: the fake stores answer no Ping, as a store from before it.
func (f *fakeStores) probeFunc() probeFunc {
	return func(ctx context.Context, addr string) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error) {
		rep, err := f.probe(ctx, addr)
		return rep, nil, nil, err
	}
}

func (f *fakeStores) list(ctx context.Context, group int, addr string) ([]wire.SourceState, []wire.SourceReceivers, error) {
	f.sources.Add(1)
	return []wire.SourceState{{Name: "src", HighSeq: 7, LowSeq: 1, Count: 7}}, nil, nil
}

// Many requests at once share one round; a round is reused for the TTL;
// probes run at most `parallel` at a time; a store that does not answer is
// recorded with the reason.
func TestRemoteProberSharesRounds(t *testing.T) {
	d := twoHosts(t)
	f := &fakeStores{delay: 50 * time.Millisecond, replies: map[string]*wire.ProbeReply{
		clientAddr(t, d, "G1S3"): {Store: "G1S3", Group: 1, State: "Leader", HasState: true},
		clientAddr(t, d, "G2S2"): {Store: "G2S2", Group: 2, State: "Follower", HasState: true},
	}}
	p := NewProber(d.Stores(), &wire.Dialer{}, testLimits)
	p.probe, p.sources, p.limits.Parallel, p.limits.Reuse = f.probeFunc(), f.list, 2, 300*time.Millisecond

	var wg sync.WaitGroup
	rounds := make([]Round, 20)
	for i := range rounds {
		wg.Add(1)
		go func() { defer wg.Done(); rounds[i] = p.Round() }()
	}
	wg.Wait()
	if n := f.calls.Load(); n != 6 {
		t.Fatalf("20 concurrent requests made %d probes, want one round of 6", n)
	}
	if m := f.most.Load(); m > 2 {
		t.Errorf("%d probes in flight at once, want at most 2", m)
	}
	if n := f.sources.Load(); n != 1 {
		t.Errorf("asked %d leaders for their sources, want 1 (G1S3)", n)
	}
	r := rounds[19]
	if len(r.Stores) != 6 || r.Stores["G1S3"].Reply == nil || r.Stores["G2S2"].Reply == nil {
		t.Fatalf("round: %+v", r.Stores)
	}
	if err := r.Stores["G1S1"].Err; err == nil || r.Stores["G1S1"].Reply != nil {
		t.Errorf("G1S1 did not answer, but the round says %+v", r.Stores["G1S1"])
	}
	if rs, ok := r.Sources[1]; !ok || rs.From != "G1S3" || len(rs.Sources) != 1 {
		t.Errorf("group 1's sources: %+v", r.Sources)
	}

	p.Round()
	if n := f.calls.Load(); n != 6 {
		t.Errorf("a request within the TTL probed again (%d probes)", n)
	}
	time.Sleep(350 * time.Millisecond)
	p.Round()
	if n := f.calls.Load(); n != 12 {
		t.Errorf("after the TTL: %d probes, want a second round (12)", n)
	}
}

// A store that never answers costs at most the probe timeout.
func TestRemoteProberTimesOut(t *testing.T) {
	d := twoHosts(t)
	f := &fakeStores{delay: time.Hour}
	p := NewProber(d.Stores()[:1], &wire.Dialer{}, testLimits)
	p.probe, p.sources = f.probeFunc(), f.list
	start := time.Now()
	r := p.Round()
	if took := time.Since(start); took > testLimits.ProbeTimeout+time.Second {
		t.Errorf("a hung store held the round for %v", took)
	}
	if res := r.Stores[d.Stores()[0].Store.Name]; res.Err == nil {
		t.Errorf("a hung store is not reported: %+v", res)
	}
}

// With every store in this process there is nothing to probe.
func TestRemoteProberNothingToProbe(t *testing.T) {
	p := NewProber(nil, &wire.Dialer{}, testLimits)
	p.probe = func(context.Context, string) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error) {
		t.Fatal("probed although every store is local")
		return nil, nil, nil, nil
	}
	if r := p.Round(); len(r.Stores) != 0 {
		t.Fatalf("round: %+v", r)
	}
}
