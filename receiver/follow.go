package receiver

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// streamEvent is what a group's subscription tells the merger.
type streamEvent struct {
	group     int // index into Receiver.groups
	deliver   *wire.Deliver
	connected bool // false: the stream to this group is down
}

// Follow delivers every message from `from` on, in order and each once,
// then keeps delivering new messages as the groups' leaders push them (no
// polling), until ctx ends; it then returns ctx.Err(). Each group's leader
// streams the source; the streams are merged by sequence number, so a
// message is delivered as soon as any group has it. A range that every
// reachable group has passed without holding it (retention released it, or
// it was never stored anywhere reachable) is reported to onMissing, if not
// nil, and skipped: an unrecoverable-loss event, raised only when no
// reachable group holds the range; one at or below Released was released
// by retention, not lost. While some group is unreachable Follow
// waits for it rather than skip (it may hold the message), unless
// Config.MissingGrace says how long to wait.
//
// from may be Resume. A durable receiver acknowledges each message once fn
// returned it without an error (unless Config.ExplicitAck), and a range
// reported to onMissing once onMissing returned: it will never be
// delivered, so a restart need not wait for it again.
func (r *Receiver) Follow(ctx context.Context, from uint64, fn func(Message) error, onMissing func(Range)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from, err := r.start(ctx, from)
	if err != nil {
		return err
	}
	if r.durable != nil {
		inner, innerMissing := fn, onMissing
		fn = func(m Message) error {
			r.durable.hand(m.Seq)
			if err := inner(m); err != nil {
				return err
			}
			r.consumed(m.Seq)
			return nil
		}
		onMissing = func(rg Range) {
			r.durable.hand(rg.To)
			if innerMissing != nil {
				innerMissing(rg)
			}
			r.consumed(rg.To)
		}
	}
	var next atomic.Uint64
	next.Store(from)
	events := make(chan streamEvent, 64)
	for i := range r.groups {
		go r.stream(ctx, i, &next, events)
	}
	m := merger{
		grace:       r.cfg.MissingGrace,
		next:        from,
		pending:     map[uint64]pendingMsg{},
		through:     make([]uint64, len(r.groups)),
		connected:   make([]bool, len(r.groups)),
		downSince:   make([]time.Time, len(r.groups)),
		released:    &r.released,
		unpublished: &r.unpublished,
		passedOver:  r.passedOver,
	}
	start := time.Now()
	for i := range m.downSince {
		m.downSince[i] = start
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-events:
			m.apply(ev)
		case <-tick.C:
		}
		if err := m.deliver(fn, onMissing); err != nil {
			return err
		}
		next.Store(m.next)
	}
}

// merger merges the groups' streams into one ordered delivery.
type merger struct {
	grace       time.Duration // see Config.MissingGrace
	next        uint64
	pending     map[uint64]pendingMsg // messages above next, waiting for next
	through     []uint64              // per group: every held message up to here was streamed
	connected   []bool
	downSince   []time.Time
	released    *releasedMark   // the receiver's: what the streams say retention released
	unpublished *unpublishedSet // the receiver's: what the streams say was never published
	passedOver  func([]Range)   // tells Config.OnUnpublished of a skipped run's unpublished parts
}

func (m *merger) apply(ev streamEvent) {
	g := ev.group
	if ev.deliver == nil {
		if m.connected[g] != ev.connected {
			m.connected[g] = ev.connected
			if !ev.connected {
				m.downSince[g] = time.Now()
			}
		}
		return
	}
	m.connected[g] = true
	m.released.see(ev.deliver.Released)
	m.unpublished.see(ev.deliver.Unpublished)
	for _, msg := range ev.deliver.Msgs {
		if msg.Seq >= m.next {
			// The lowest group's payload wins (conflicts.go).
			if held, ok := m.pending[msg.Seq]; !ok {
				m.pending[msg.Seq] = pendingMsg{payload: msg.Payload, group: g, since: time.Now()}
			} else if g < held.group {
				m.pending[msg.Seq] = pendingMsg{payload: msg.Payload, group: g, since: held.since}
			}
		}
	}
	m.through[g] = max(m.through[g], ev.deliver.Through)
}

// deliver hands out every message it can, in order, and skips ranges that
// no reachable group holds.
func (m *merger) deliver(fn func(Message) error, onMissing func(Range)) error {
	for {
		for {
			p, ok := m.pending[m.next]
			if !ok {
				break
			}
			if m.lowerMayHold(p) {
				return nil // a lower group's payload would win: wait for its stream
			}
			delete(m.pending, m.next)
			if err := fn(Message{Seq: m.next, Payload: p.payload}); err != nil {
				return err
			}
			m.next++
		}
		end, ok := m.missingEnd()
		if !ok {
			return nil
		}
		if onMissing != nil {
			for _, rg := range m.unpublished.without([]Range{{From: m.next, To: end}}) {
				onMissing(rg) // never-published numbers are not missing
			}
		}
		if m.passedOver != nil {
			m.passedOver([]Range{{From: m.next, To: end}})
		}
		m.next = end + 1
	}
}

// missingEnd decides whether m.next is held by no reachable group: every
// connected group has streamed past it without it, and every other group
// has been unreachable for missingGrace. It returns the end of the missing
// run: up to the next pending message or the least far any group got.
func (m *merger) missingEnd() (uint64, bool) {
	end := uint64(0)
	anyConnected := false
	for g := range m.through {
		if !m.connected[g] {
			// An unreachable group may hold the message (a paused host's
			// group, stable there only): wait for it, unless told otherwise.
			if m.grace == 0 || time.Since(m.downSince[g]) < m.grace {
				return 0, false
			}
			continue
		}
		anyConnected = true
		if m.through[g] < m.next {
			return 0, false
		}
		if end == 0 || m.through[g] < end {
			end = m.through[g]
		}
	}
	if !anyConnected {
		return 0, false
	}
	if len(m.pending) > 0 {
		keys := make([]uint64, 0, len(m.pending))
		for k := range m.pending {
			keys = append(keys, k)
		}
		lowest := slices.Min(keys)
		end = min(end, lowest-1)
	}
	return end, end >= m.next
}

// stream keeps one subscription to group gi's leader open, re-opening it
// (from the merger's current position) after any failure or leader change.
func (r *Receiver) stream(ctx context.Context, gi int, next *atomic.Uint64, events chan<- streamEvent) {
	g := r.groups[gi]
	c := groupclient.New(g.Group, g.Addrs, g.Dialer) // its own leader memory: Fetch's client is not for concurrent use
	defer c.Close()                                  // the connection of fetches asking again for damaged messages
	send := func(ev streamEvent) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go c.KeepLearning(ctx, learnInterval, nil, r.log)
	for ctx.Err() == nil {
		err := r.subscribeOnce(ctx, c, gi, next.Load(), send)
		if ctx.Err() != nil {
			return
		}
		if !send(streamEvent{group: gi, connected: false}) {
			return
		}
		r.log.Debug("subscription to group ended; re-subscribing", "group", gi+1, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// learnInterval is how often a following receiver asks its group's leader
// where the members listen (groupclient.Learn): a host replaced at another
// address is found there even once no store of the receiver's list answers.
const learnInterval = 2 * time.Second

// subscriptionSilence is how long a subscription may stay silent: the
// leader sends at least a heartbeat every second.
const subscriptionSilence = 5 * time.Second

// subscribeOnce subscribes at the group's leader (found by the group client)
// and forwards Deliver frames until the stream fails or the leader hands
// over.
func (r *Receiver) subscribeOnce(ctx context.Context, c *groupclient.Client, gi int, from uint64, send func(streamEvent) bool) error {
	conn, m, err := c.Open(ctx, &wire.Subscribe{ReqID: 1, Source: r.cfg.Source, From: from, Receiver: r.cfg.Name}, groupclient.OpenOptions{
		Reply:       wire.TypeDeliver,
		Timeout:     subscriptionSilence,
		NextOnError: func(*wire.Error) bool { return true },
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		switch m := m.(type) {
		case *wire.Deliver:
			m.Msgs = r.intactDelivered(ctx, c, m.Msgs) // a damaged payload is asked for again, else treated as not held
			if !send(streamEvent{group: gi, deliver: m}) {
				return ctx.Err()
			}
		case *wire.NotLeader:
			from := c.Leader() // the store this session was opened on
			c.Redirected(m)
			return fmt.Errorf("store %s is no longer the leader of group %d", from, gi+1)
		case *wire.Error:
			return m
		}
		_ = conn.SetReadDeadline(time.Now().Add(subscriptionSilence))
		if m, err = conn.Read(); err != nil {
			return err
		}
	}
}
