package publisher

import (
	"slices"

	"umstore/wire"
)

// Confirmed delivery (UM ume_confirmed_delivery_notification and
// ume_retention_unique_confirmations). The stores record, through their
// logs, how far each named receiver consumed the source; a group's leader
// pushes those positions to a publisher that asked (Delivery frames). A
// receiver acknowledges to every group, so the same receiver is reported
// by each: positions are merged by receiver name, keeping the furthest, and
// a message is confirmed once ConfirmedDelivery distinct names have
// reached it. A receiver's position covers every message up to it (a
// receiver moves its position past a range it was told is lost, too).

// confirmations is what the publisher knows of its receivers.
type confirmations struct {
	positions map[string]uint64 // by receiver name: the furthest any group reported
	through   uint64            // highest sequence number consumed by ConfirmedDelivery distinct receivers
	told      uint64            // highest sequence number OnConfirmed was called for
	signal    chan struct{}
}

// delivery merges a group's report of its receivers' positions.
func (p *Publisher) delivery(d *wire.Delivery) {
	n := p.cfg.ConfirmedDelivery
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.confirm
	if c.positions == nil {
		c.positions = map[string]uint64{}
	}
	for _, r := range d.Receivers {
		c.positions[r.Name] = max(c.positions[r.Name], r.Consumed)
	}
	through := confirmedThrough(c.positions, n)
	if through <= c.through {
		return
	}
	c.through = through
	if p.tracker != nil {
		p.releaseLocked()
	}
	p.broadcastLocked()
	select {
	case c.signalLocked() <- struct{}{}:
	default:
	}
}

// signalLocked returns the channel that wakes deliverConfirmations,
// making it on first use. Caller holds p.mu.
func (c *confirmations) signalLocked() chan struct{} {
	if c.signal == nil {
		c.signal = make(chan struct{}, 1)
	}
	return c.signal
}

// confirmedThrough is the highest sequence number at least n of the
// positions reached: the n-th furthest.
func confirmedThrough(positions map[string]uint64, n int) uint64 {
	if len(positions) < n {
		return 0
	}
	all := make([]uint64, 0, len(positions))
	for _, v := range positions {
		all = append(all, v)
	}
	slices.Sort(all)
	return all[len(all)-n]
}

// flightBaseLocked is the sequence number up to which nothing counts in
// flight: the stable watermark, and, with RetainUntilConfirmed, no further
// than the confirmed one. Caller holds p.mu.
func (p *Publisher) flightBaseLocked() uint64 {
	base := p.tracker.Stable()
	if p.cfg.RetainUntilConfirmed {
		base = min(base, max(p.confirm.through, p.firstSeq-1))
	}
	return base
}

// heldBack records a group's leader holding the publisher back: blocking
// receiver-paced persistence at its limit, or acknowledgements waiting for
// the stores the intragroup behaviour names.
func (p *Publisher) heldBack(g int, m *wire.HeldBack) {
	p.mu.Lock()
	first := p.stats.HeldBack == 0
	p.stats.HeldBack++
	p.mu.Unlock()
	if first {
		p.log.Info("a store group holds this publisher back", "group", g+1, "why", m.Reason)
	}
}

// deliverConfirmations calls OnConfirmed in order, for this session's
// sequence numbers, from one goroutine.
func (p *Publisher) deliverConfirmations() {
	p.mu.Lock()
	signal := p.confirm.signalLocked()
	p.confirm.told = max(p.confirm.told, p.firstSeq-1)
	p.mu.Unlock()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-signal:
		}
		p.mu.Lock()
		from, through := p.confirm.told+1, min(p.confirm.through, p.nextSeq-1)
		p.mu.Unlock()
		if through < from {
			continue
		}
		if p.cfg.OnConfirmed != nil {
			p.cfg.OnConfirmed(from, through)
		}
		p.mu.Lock()
		p.confirm.told = through
		p.broadcastLocked()
		p.mu.Unlock()
	}
}
