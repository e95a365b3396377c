package publisher

import (
	"time"

	"umstore/wire"
)

// GroupStable reports that one group confirmed more of the source: every
// message First..Last is committed by the group (stable in it). A group's
// events come in sequence order. It is UM's per-store stability event
// (MESSAGE_STABLE_EX with INTRAGROUP_STABLE and STORE): in umstore the
// group's leader acknowledges for the whole group, once the stores its
// intragroup behaviour names hold the messages (a quorum by default;
// Config.Intragroup).
type GroupStable struct {
	Group       int    // 1-based position in Config.Groups
	Store       string // client address of the store that acknowledged: the group's leader
	First, Last uint64
}

// FlightState says which way the flight crossed its limit.
type FlightState int

const (
	// FlightOver: a Send found the flight full and went on (FlightNotify).
	FlightOver FlightState = iota + 1
	// FlightUnder: the flight is no longer full.
	FlightUnder
)

func (s FlightState) String() string {
	switch s {
	case FlightOver:
		return "over"
	case FlightUnder:
		return "under"
	}
	return "FlightState(?)"
}

// FlightEvent is UM's flight size notification (OVER/UNDER): the flight's
// state and what was in flight when it changed.
type FlightEvent struct {
	State         FlightState
	InFlight      int   // unstable messages
	InFlightBytes int64 // their payload bytes
}

// UnstableReason says why messages were reported unstable.
type UnstableReason int

const (
	// UnstableLifetime: the messages are still unstable after
	// Config.StabilityLifetime (UM's "store message not stable" event).
	UnstableLifetime UnstableReason = iota + 1
	// UnstableLost: a group answered that it does not hold the messages
	// and never will (a stability NAK, wire.Nak): that group will not
	// confirm them, though others may.
	UnstableLost
)

func (r UnstableReason) String() string {
	switch r {
	case UnstableLifetime:
		return "lifetime"
	case UnstableLost:
		return "lost"
	}
	return "UnstableReason(?)"
}

// Unstable reports messages First..Last that are not stable and may never
// be. Lifetime reports cover each message once, in sequence order; the
// messages stay retained and are still resent, and OnStable reports them
// if they become stable after all.
type Unstable struct {
	Reason      UnstableReason
	Group       int    // for UnstableLost: the group that said so (1-based); 0 otherwise
	Store       string // for UnstableLost: the store that said so
	First, Last uint64
}

// maxCheckInterval is how often, at most, the publisher looks for
// messages past their stability lifetime (UM's ume_store_check_interval
// default).
const maxCheckInterval = 500 * time.Millisecond

// queueLocked adds an event for the event goroutine. Caller holds p.mu.
func (p *Publisher) queueLocked(ev any) {
	p.events = append(p.events, ev)
	select {
	case p.eventSignal <- struct{}{}:
	default:
	}
}

// runEvents delivers the queued events in order, from one goroutine, and
// looks for messages past their stability lifetime.
func (p *Publisher) runEvents() {
	var tick <-chan time.Time
	if lt := p.cfg.StabilityLifetime; lt > 0 {
		t := time.NewTicker(min(maxCheckInterval, max(lt/2, time.Millisecond)))
		defer t.Stop()
		tick = t.C
	} else {
		t := time.NewTicker(maxCheckInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.eventSignal:
		case <-tick:
			p.check()
		}
		p.mu.Lock()
		evs := p.events
		p.events = nil
		p.mu.Unlock()
		for _, ev := range evs {
			p.dispatch(ev)
		}
	}
}

// check runs the periodic checks: messages past their lifetime, a flight
// no longer full, and stability that advanced without a confirmation (a
// lagging group went away under all-active).
func (p *Publisher) check() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracker == nil {
		return
	}
	p.settleFlightLocked()
	if lt := p.cfg.StabilityLifetime; lt > 0 {
		if r, ok := p.flight.expire(p.flight.now(), lt); ok {
			p.stats.ReportedUnstable += r.To - r.From + 1
			p.queueLocked(Unstable{Reason: UnstableLifetime, First: r.From, Last: r.To})
		}
	}
	if p.tracker.Stable() > p.delivered {
		select {
		case p.stableSignal <- struct{}{}:
		default:
		}
	}
}

func (p *Publisher) dispatch(ev any) {
	switch ev := ev.(type) {
	case GroupStable:
		if p.cfg.OnGroupStable != nil {
			p.cfg.OnGroupStable(ev)
		}
	case FlightEvent:
		if p.cfg.OnFlightSize != nil {
			p.cfg.OnFlightSize(ev)
		}
	case Unstable:
		if p.cfg.OnUnstable != nil {
			p.cfg.OnUnstable(ev)
		}
	}
}

// naked handles a group's stability NAK: the sequence numbers outside Lost
// are confirmed as an Ack would; the lost ones are reported.
func (p *Publisher) naked(g int, m *wire.Nak) {
	next := m.FirstSeq
	var lost []Unstable
	for _, r := range m.Lost {
		from, to := max(r.From, m.FirstSeq), min(r.To, m.LastSeq)
		if from > to || from < next {
			continue // outside the frame, or out of order: ignored
		}
		if from > next {
			p.confirmed(g, next, from-1)
		}
		lost = append(lost, Unstable{Reason: UnstableLost, Group: g + 1, Store: p.groups[g].client.Leader(), First: from, Last: to})
		next = to + 1
	}
	if next <= m.LastSeq {
		p.confirmed(g, next, m.LastSeq)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range lost {
		p.stats.Lost += u.Last - u.First + 1
		p.queueLocked(u)
	}
	p.log.Warn("a store group says it has lost messages this publisher sent; it will not confirm them", "group", g+1, "lost", m.Lost)
}
