package publisher

import (
	"sync"
	"time"
)

// learner asks where each group's members listen now (groupclient.Learn)
// for every publisher sharing one Connections, from one goroutine every
// learnInterval. A publisher with connections of its own keeps a
// goroutine per group for it (group.learn); ten thousand sharing ones
// would keep twenty thousand goroutines and tickers, to find every time
// that another client of the process had asked a moment before.
type learner struct {
	mu      sync.Mutex
	groups  map[*group]struct{}
	running bool
}

// add has the learner ask for g until g's publisher closes.
func (l *learner) add(g *group) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.groups == nil {
		l.groups = map[*group]struct{}{}
	}
	l.groups[g] = struct{}{}
	if !l.running {
		l.running = true
		go l.run()
	}
}

// run asks for every connected group every learnInterval, forgets the
// groups of closed publishers, and ends when none is left.
func (l *learner) run() {
	var round []*group
	for {
		time.Sleep(learnInterval)
		round = l.round(round[:0])
		if round == nil {
			return
		}
		for _, g := range round {
			g.learnNow()
		}
	}
}

// round appends to gs the groups of publishers still open, forgetting the
// others; nil when none is left (the learner then stops running).
func (l *learner) round(gs []*group) []*group {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g := range l.groups {
		if g.p.ctx.Err() != nil {
			delete(l.groups, g)
			continue
		}
		gs = append(gs, g)
	}
	if len(l.groups) == 0 {
		l.running = false
		return nil
	}
	return gs
}
