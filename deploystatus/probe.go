package deploystatus

import (
	"context"
	"fmt"
	"sync"
	"time"

	"umstore/internal/cli"
	"umstore/internal/groupclient"
	"umstore/placement"
	"umstore/wire"
)

// Limits bound a round of probes.
type Limits struct {
	// ProbeTimeout bounds connecting to one store and its answer, and then
	// asking a leader for its sources.
	ProbeTimeout time.Duration
	// RoundTimeout bounds a whole round: the probes, then the leaders'
	// sources.
	RoundTimeout time.Duration
	// Parallel bounds the connections a round has open at once; 0 opens
	// them all at once.
	Parallel int
	// Reuse is how long a round's result is handed out again instead of
	// probing anew; 0 probes every time.
	Reuse time.Duration
	// SkipSources leaves out asking each leader what it holds of each
	// source, for callers that only need the stores' states.
	SkipSources bool
}

// probeFunc asks the store at a client address for its state, for its
// Pong (nil from a store that does not know Ping) and for where its
// group's members listen (nil from a store older than moves).
type probeFunc func(ctx context.Context, addr string) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error)

// sourcesFunc asks a group's leader, at a client address, what it holds of
// each source and, when it tells, of their receivers.
type sourcesFunc func(ctx context.Context, group int, addr string) ([]wire.SourceState, []wire.SourceReceivers, error)

// ProbeResult is one store's answer to a probe, or why there was none.
// Pong, when the store knows Ping, says which policy it runs; Members,
// where the members of its group listen (moved.go).
type ProbeResult struct {
	Reply   *wire.ProbeReply
	Pong    *wire.Pong
	Members *wire.MemberList
	Err     error
	// At is where the store answered when that is not the deployment
	// file's address: its group says it moved there (a replaced host).
	At string
}

// LeaderSources is what a group's leader holds of each source.
type LeaderSources struct {
	From    string // the leader that answered
	Sources []wire.SourceState
	// Receivers are the leader's receivers of each source; nil when the
	// leader does not report them (a store older than durable receivers).
	Receivers []wire.SourceReceivers
}

// Round is the outcome of one round of probes.
type Round struct {
	Stores  map[string]ProbeResult // by store name
	Sources map[int]LeaderSources  // by group, for groups led by a probed store
}

// Prober asks stores for their state over the wire protocol. Rounds are
// shared: a caller arriving while one is under way waits for it, and its
// result is reused for Limits.Reuse, so however many callers poll, each
// store is asked at most once per Reuse.
type Prober struct {
	targets []placement.StoreRef
	probe   probeFunc
	sources sourcesFunc
	limits  Limits

	mu      sync.Mutex
	last    Round
	at      time.Time     // when last was taken; zero before the first round
	running chan struct{} // closed when the round under way ends; nil if none
}

// NewProber probes targets through dialer, within limits.
func NewProber(targets []placement.StoreRef, dialer *wire.Dialer, limits Limits) *Prober {
	return &Prober{
		targets: targets,
		probe: func(ctx context.Context, addr string) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error) {
			return probeStore(ctx, addr, dialer)
		},
		sources: func(ctx context.Context, group int, addr string) ([]wire.SourceState, []wire.SourceReceivers, error) {
			c := groupclient.New(group, []string{addr}, dialer)
			defer c.Close()
			list, err := c.Sources(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("ask %s for its sources: %w", addr, err)
			}
			return list.Sources, askReceivers(ctx, c), nil
		},
		limits: limits,
	}
}

// Round returns a round no older than Limits.Reuse, running one if needed.
func (p *Prober) Round() Round {
	if len(p.targets) == 0 {
		return Round{}
	}
	p.mu.Lock()
	for {
		if !p.at.IsZero() && time.Since(p.at) < p.limits.Reuse {
			r := p.last
			p.mu.Unlock()
			return r
		}
		if p.running == nil {
			break
		}
		wait := p.running
		p.mu.Unlock()
		<-wait
		p.mu.Lock()
	}
	done := make(chan struct{})
	p.running = done
	p.mu.Unlock()

	r := p.round()

	p.mu.Lock()
	p.last, p.at, p.running = r, time.Now(), nil
	p.mu.Unlock()
	close(done)
	return r
}

// round probes every target, at most Limits.Parallel at a time, then asks
// each leader for its group's sources.
func (p *Prober) round() Round {
	ctx, cancel := context.WithTimeout(context.Background(), p.limits.RoundTimeout)
	defer cancel()
	results := make([]ProbeResult, len(p.targets))
	parallel := p.limits.Parallel
	if parallel < 1 {
		parallel = len(p.targets)
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, ref := range p.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, pcancel := context.WithTimeout(ctx, p.limits.ProbeTimeout)
			defer pcancel()
			rep, pong, members, err := p.probe(pctx, ref.ClientAddr())
			if err != nil {
				err = fmt.Errorf("probe %s at %s: %w", ref.Store.Name, ref.ClientAddr(), err)
			}
			results[i] = ProbeResult{Reply: rep, Pong: pong, Members: members, Err: err}
		}()
	}
	wg.Wait()

	r := Round{Stores: map[string]ProbeResult{}, Sources: map[int]LeaderSources{}}
	for i, ref := range p.targets {
		r.Stores[ref.Store.Name] = results[i]
	}
	p.findMoved(ctx, r) // moved.go
	var leaders []placement.StoreRef
	for _, ref := range p.targets {
		if rep := r.Stores[ref.Store.Name].Reply; rep != nil && rep.State == "Leader" {
			leaders = append(leaders, ref)
		}
	}
	if p.limits.SkipSources {
		return r
	}
	var mu sync.Mutex
	for _, ref := range leaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sctx, scancel := context.WithTimeout(ctx, p.limits.ProbeTimeout)
			defer scancel()
			list, receivers, err := p.sources(sctx, ref.Group, r.Stores[ref.Store.Name].addr(ref))
			if err != nil {
				return // the group is shown without sources
			}
			mu.Lock()
			r.Sources[ref.Group] = LeaderSources{From: ref.Store.Name, Sources: list, Receivers: receivers}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return r
}

// probeStore asks one store for its state (Probe) and, on the same
// connection, for its Pong (the policy it runs) and its group's members'
// addresses. A store that does not know Ping or Members answers the Probe
// alone.
func probeStore(ctx context.Context, addr string, d *wire.Dialer) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error) {
	c, _, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, nil, nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.NetConn().SetDeadline(dl)
	}
	for _, m := range []wire.Message{&wire.Probe{ReqID: 1}, &wire.Ping{ReqID: 2}, &wire.Members{ReqID: 3}} {
		if err := c.Write(m); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := c.Flush(); err != nil {
		return nil, nil, nil, err
	}
	m, err := c.Read()
	if err != nil {
		return nil, nil, nil, err
	}
	var rep *wire.ProbeReply
	switch m := m.(type) {
	case *wire.ProbeReply:
		rep = m
	case *wire.Error:
		return nil, nil, nil, m
	default:
		return nil, nil, nil, fmt.Errorf("%w: probe answered with frame type %d", wire.ErrMalformed, m.Type())
	}
	// The other two answers, in order; an older store answers an Error
	// for what it does not know.
	var pong *wire.Pong
	var members *wire.MemberList
	for range 2 {
		m, err := c.Read()
		if err != nil {
			break
		}
		switch m := m.(type) {
		case *wire.Pong:
			pong = m
		case *wire.MemberList:
			members = m
		}
	}
	return rep, pong, members, nil
}

// Dialer is how an operator's command reaches the stores of d: with the
// deployment's TLS configuration and token when its security section names
// them and they can be read (without, when they cannot: the stores then
// refuse, and the command reports them as not answering).
func Dialer(d *placement.Deployment, client string, timeout time.Duration) *wire.Dialer {
	dialer := &wire.Dialer{Client: client, Timeout: timeout}
	if tlsCfg, token, err := cli.ClientSecurity(d, cli.SecurityFlags{}); err == nil {
		dialer.TLS, dialer.Token = tlsCfg, token
	}
	return dialer
}
