package deploystatus

import (
	"context"
	"fmt"
	"sync"

	"umstore/placement"
)

// Stores that moved. A host replaced by a server at another address runs
// its stores there while an observer may still hold the old deployment
// file. The stores know better than the file: every store tells where the
// members of its group listen now (wire.MemberList, asked with every
// probe). So a store that did not answer at the file's address is probed
// again where an answering member of its group places it, and, if it
// answers there as itself, is shown there, as moved.

// addr is where the store was reached: where it moved, or the file's
// address.
func (res ProbeResult) addr(ref placement.StoreRef) string {
	if res.At != "" {
		return res.At
	}
	return ref.ClientAddr()
}

// findMoved probes again, where their groups say they listen now, the
// stores that did not answer at the file's address.
func (p *Prober) findMoved(ctx context.Context, r Round) {
	// Where the answering members say each store listens.
	where := map[string]string{}
	for _, ref := range p.targets {
		res := r.Stores[ref.Store.Name]
		if res.Reply == nil || res.Members == nil || res.Members.Group != ref.Group || res.Members.Store != ref.Store.Name {
			continue
		}
		for _, m := range res.Members.Members {
			if m.ClientAddr != "" && (m.Moved || m.Recorded) && (where[m.Name] == "" || m.Recorded) {
				where[m.Name] = m.ClientAddr
			}
		}
	}
	// Chosen before any probe starts: the probes write r.Stores.
	type move struct{ name, at string }
	var moves []move
	for _, ref := range p.targets {
		name := ref.Store.Name
		at := where[name]
		if r.Stores[name].Reply != nil || at == "" || at == ref.ClientAddr() {
			continue
		}
		moves = append(moves, move{name, at})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, mv := range moves {
		name, at := mv.name, mv.at
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, p.limits.ProbeTimeout)
			defer cancel()
			rep, pong, members, err := p.probe(pctx, at)
			mu.Lock()
			defer mu.Unlock()
			prev := r.Stores[name]
			switch {
			case err != nil:
				prev.Err = fmt.Errorf("%w; its group says it moved to %s, where it does not answer either: %v", prev.Err, at, err)
			case rep.Store != name:
				prev.Err = fmt.Errorf("%w; its group says it moved to %s, where store %q answers", prev.Err, at, rep.Store)
			default:
				prev = ProbeResult{Reply: rep, Pong: pong, Members: members, At: at}
			}
			r.Stores[name] = prev
		}()
	}
	wg.Wait()
}

// movedNames adds to nameByAddr the addresses the round found stores at.
func movedNames(nameByAddr map[string]string, remote Round) {
	for name, res := range remote.Stores {
		if res.At != "" {
			nameByAddr[res.At] = name
		}
	}
}
