package receiver

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// Every message a store serves comes with the CRC32C of its payload as the
// store keeps it (wire.Msg.CRC). The receiver checks it before anything
// else sees the message: a payload that does not match is never handed to
// the application. It is treated as not delivered by that group: Read asks
// the other groups for it (and, when one is damaged, every group once
// more), Follow waits for another group's stream; if no group has it
// intact it is reported like a range no group holds (a *MissingError from
// Read, onMissing from Follow). A message without a CRC (a store older than
// checksums) is taken as it is.

// Damaged returns how many messages the stores served damaged (their
// payload did not match their checksum): none was handed to the
// application.
func (r *Receiver) Damaged() uint64 { return r.damaged.n.Load() }

// intactOnly returns msgs without the damaged ones, which it counts and
// logs, and whether there were any. It keeps msgs' backing array when
// nothing is dropped.
func (r *Receiver) intactOnly(group int, msgs []wire.Msg) ([]wire.Msg, bool) {
	bad := 0
	for _, m := range msgs {
		if !m.Intact() {
			bad++
		}
	}
	if bad == 0 {
		return msgs, false
	}
	out := make([]wire.Msg, 0, len(msgs)-bad)
	for _, m := range msgs {
		if m.Intact() {
			out = append(out, m)
			continue
		}
		r.damaged.n.Add(1)
		if dropped, ok := r.damaged.allow(time.Now()); ok {
			r.log.Warn("a store served a message whose payload does not match its checksum; not delivered, asking the other groups for it",
				"group", group, "seq", m.Seq, "crc", m.CRC, "payload_crc", wire.Checksum(m.Payload), "damaged_since_last_warning", dropped)
		}
	}
	return out, true
}

// refetchTimeout bounds asking a group again for a message its stream
// delivered damaged.
const refetchTimeout = 5 * time.Second

// intactDelivered returns the messages of a Deliver from c's group without
// the damaged ones, each of which it asks the group for once more (a
// payload damaged on its way arrives intact the second time). One still
// damaged is left out: the merger then waits for another group's copy, or
// reports it when every group has passed it.
func (r *Receiver) intactDelivered(ctx context.Context, c *groupclient.Client, msgs []wire.Msg) []wire.Msg {
	kept, damaged := r.intactOnly(c.Group, msgs)
	if !damaged {
		return msgs
	}
	for _, m := range msgs {
		if m.Intact() {
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, refetchTimeout)
		rep, err := c.Fetch(fctx, &wire.Fetch{Source: r.cfg.Source, From: m.Seq, To: m.Seq, MaxCount: 1})
		cancel()
		if err != nil {
			continue
		}
		again, _ := r.intactOnly(c.Group, rep.Msgs)
		for _, a := range again {
			if a.Seq == m.Seq {
				kept = append(kept, a)
			}
		}
	}
	slices.SortFunc(kept, func(a, b wire.Msg) int { return cmp.Compare(a.Seq, b.Seq) })
	return kept
}

// damageLog counts damaged messages and lets one warning through per
// second.
type damageLog struct {
	n atomic.Uint64

	mu      sync.Mutex
	next    time.Time
	dropped int
}

func (l *damageLog) allow(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.dropped++
		return 0, false
	}
	d := l.dropped
	l.dropped, l.next = 0, now.Add(time.Second)
	return d, true
}
