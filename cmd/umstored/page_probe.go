package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"umstore/internal/groupclient"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

// Limits of the status page's probes of stores run by other processes.
const (
	// probeTTL is how long one round of probes is reused: however many
	// browsers poll, the other hosts' stores are asked at most once per TTL.
	probeTTL = time.Second
	// probeTimeout bounds connecting to one store and its answer.
	probeTimeout = time.Second
	// probeRound bounds a whole round (probes, then the leaders' sources).
	probeRound = 3 * time.Second
	// probeParallel bounds the connections a round has open at once.
	probeParallel = 8
)

// probeFunc asks the store at a client address for its state.
type probeFunc func(ctx context.Context, addr string) (*wire.ProbeReply, error)

// sourcesFunc asks a group's leader, at a client address, what it holds of
// each source.
type sourcesFunc func(ctx context.Context, group int, addr string) ([]wire.SourceState, error)

// probeResult is one remote store's answer, or why there was none.
type probeResult struct {
	reply *wire.ProbeReply
	err   error
}

// remoteSources is what a remote leader holds of each source.
type remoteSources struct {
	from    string // the leader that answered
	sources []wire.SourceState
}

// remoteRound is the outcome of one round of probes.
type remoteRound struct {
	stores  map[string]probeResult // by store name
	sources map[int]remoteSources  // by group, for groups led by a remote store
}

// remoteProber asks the stores this daemon does not run for their state.
// Rounds are shared: a request arriving while one is under way waits for
// it, and its result is reused for probeTTL.
type remoteProber struct {
	targets  []placement.StoreRef
	probe    probeFunc
	sources  sourcesFunc
	ttl      time.Duration
	parallel int

	mu      sync.Mutex
	last    remoteRound
	at      time.Time     // when last was taken; zero before the first round
	running chan struct{} // closed when the round under way ends; nil if none
}

// newRemoteProber probes targets over the wire protocol.
func newRemoteProber(targets []placement.StoreRef) *remoteProber {
	dialer := &wire.Dialer{Client: "status page", Timeout: probeTimeout}
	return &remoteProber{
		targets: targets,
		probe: func(ctx context.Context, addr string) (*wire.ProbeReply, error) {
			return storegroup.ProbeStore(ctx, addr, dialer)
		},
		sources: func(ctx context.Context, group int, addr string) ([]wire.SourceState, error) {
			c := groupclient.New(group, []string{addr}, dialer)
			defer c.Close()
			list, err := c.Sources(ctx)
			if err != nil {
				return nil, fmt.Errorf("ask %s for its sources: %w", addr, err)
			}
			return list.Sources, nil
		},
		ttl:      probeTTL,
		parallel: probeParallel,
	}
}

// get returns a round no older than the TTL, running one if needed.
func (p *remoteProber) get() remoteRound {
	if len(p.targets) == 0 {
		return remoteRound{}
	}
	p.mu.Lock()
	for {
		if !p.at.IsZero() && time.Since(p.at) < p.ttl {
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

// round probes every target, at most p.parallel at a time, then asks each
// remote leader for its group's sources.
func (p *remoteProber) round() remoteRound {
	ctx, cancel := context.WithTimeout(context.Background(), probeRound)
	defer cancel()
	results := make([]probeResult, len(p.targets))
	sem := make(chan struct{}, max(p.parallel, 1))
	var wg sync.WaitGroup
	for i, ref := range p.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
			defer pcancel()
			rep, err := p.probe(pctx, ref.ClientAddr())
			if err != nil {
				err = fmt.Errorf("probe %s at %s: %w", ref.Store.Name, ref.ClientAddr(), err)
			}
			results[i] = probeResult{reply: rep, err: err}
		}()
	}
	wg.Wait()

	r := remoteRound{stores: map[string]probeResult{}, sources: map[int]remoteSources{}}
	var leaders []placement.StoreRef
	for i, ref := range p.targets {
		r.stores[ref.Store.Name] = results[i]
		if rep := results[i].reply; rep != nil && rep.State == "Leader" {
			leaders = append(leaders, ref)
		}
	}
	var mu sync.Mutex
	for _, ref := range leaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sctx, scancel := context.WithTimeout(ctx, probeTimeout)
			defer scancel()
			list, err := p.sources(sctx, ref.Group, ref.ClientAddr())
			if err != nil {
				return // the table shows the group without sources
			}
			mu.Lock()
			r.sources[ref.Group] = remoteSources{from: ref.Store.Name, sources: list}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return r
}
