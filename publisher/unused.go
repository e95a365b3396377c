package publisher

import (
	"context"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// A publisher restarted while a group does not answer resumes past its
// state file's bound (SentUpTo, reserve.go): that group may hold what an
// earlier incarnation sent up to it. It never sends the numbers between
// its last stable one (or the highest an answering group holds) and the
// bound (resumeDecision.unused). Left alone, every group would record
// them as a gap, and every receiver would report them as loss for good.
//
// The publisher says so, but only once it knows no group holds them: a
// group that had not answered may hold acknowledged messages in the range,
// and a group told "never published" before repair copied them in would
// let a receiver pass over them while the holding group is unreachable
// (the fault suite found exactly that: seed 1004, schedules 2, 25 and 32,
// when the range was declared at once). So the range waits until every
// group that had not answered registers with this session: each then says
// the highest number it holds (Registered.HighSeq), the range starts above
// it, and once the last has answered what is left is declared, on the
// next Publish frame of each connection (wire.Publish.UnusedFrom,
// UnusedTo), or on its next KeepAlive when it has nothing to publish; each
// group records it as never published (repository.Unpublished) except for
// the numbers it holds. A group whose highest is already this session's
// (repair copied the new messages in before it answered) is asked how many
// it holds in the range (RangeDigest): none, and the range stands; any, or
// no answer, and nothing is declared: the range is reported as a gap, as
// before, possibly loss that is not loss, never a message passed over in
// silence.
//
// Numbers at or below the state file's last stable one are never declared:
// they were published, and a group that lost them lost them.

// holdUnusedLocked keeps d's skipped range until the groups that did not
// answer have. Caller holds p.mu.
func (p *Publisher) holdUnusedLocked(d resumeDecision) {
	if d.unused.From == 0 || d.unused.To < d.unused.From {
		return
	}
	p.unusedPending = d.unused
	p.unusedWaiting = map[int]bool{}
	for g := range p.cfg.Groups {
		if !p.reg.Groups[g].Answered {
			p.unusedWaiting[g] = true
		}
	}
	p.log.Info("skipped the numbers up to the state file's bound that a silent group may hold; they are declared never published once every group has said what it holds",
		"from", d.unused.From, "to", d.unused.To, "groups_waited_for", p.waitingGroupsLocked())
}

// lateAnswerLocked narrows the skipped range by what group g, which had
// not answered when the session began, holds (high, its highest), and
// declares what is left once no group is still to answer. Caller holds
// p.mu.
func (p *Publisher) lateAnswerLocked(g int, high uint64) {
	if !p.unusedWaiting[g] || p.unusedChecking[g] {
		return
	}
	r := &p.unusedPending
	switch {
	case high >= p.firstSeq:
		// This session's messages reached it first (repair), so its
		// highest says nothing of the range: ask it what it holds there.
		if p.unusedChecking == nil {
			p.unusedChecking = map[int]bool{}
		}
		p.unusedChecking[g] = true
		p.wg.Add(1)
		go p.checkUnusedHeld(g, *r)
		return
	case high >= r.From:
		r.From = high + 1
	}
	p.answeredUnusedLocked(g)
}

// checkUnusedHeld asks group g how many messages it holds in r (a
// RangeDigest), for lateAnswerLocked: none, and the range stands; some,
// or no answer, and nothing is declared.
func (p *Publisher) checkUnusedHeld(g int, r wire.Range) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	c := groupclient.New(g+1, p.cfg.Groups[g], p.dialer)
	defer c.Close()
	m, err := c.Call(ctx, &wire.RangeDigest{Source: p.cfg.Source, From: r.From, To: r.To})
	d, ok := m.(*wire.RangeDigestReply)
	empty := err == nil && ok && d.Through >= r.To && d.Count == 0
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.unusedChecking, g)
	if !empty {
		p.log.Info("not declaring the skipped numbers never published: a group that answered late may hold some of them; they stay a gap",
			"group", g+1, "from", r.From, "to", r.To, "detail", err)
		p.unusedPending, p.unusedWaiting = wire.Range{}, nil
		return
	}
	p.answeredUnusedLocked(g)
}

// answeredUnusedLocked counts group g as having said what it holds of the
// skipped range, and declares what is left of it once every group has.
// Caller holds p.mu.
func (p *Publisher) answeredUnusedLocked(g int) {
	if !p.unusedWaiting[g] {
		return
	}
	delete(p.unusedWaiting, g)
	if len(p.unusedWaiting) > 0 {
		return
	}
	if r := p.unusedPending; r.From <= r.To {
		p.unusedDeclared.Store(&r)
		p.log.Info("every group has said what it holds: declaring the skipped numbers never published", "from", r.From, "to", r.To)
	}
	p.unusedPending, p.unusedWaiting = wire.Range{}, nil
}

// waitingGroupsLocked lists (1-based) the groups the skipped range waits
// for. Caller holds p.mu.
func (p *Publisher) waitingGroupsLocked() []int {
	var out []int
	for g := range p.cfg.Groups {
		if p.unusedWaiting[g] {
			out = append(out, g+1)
		}
	}
	return out
}

// declareUnused sets the declared range on pub, the first Publish of a
// connection after the range became final, and reports whether it did.
// A connection with nothing more to publish declares it on its next
// KeepAlive instead (declareUnusedKept).
func (p *Publisher) declareUnused(pub *wire.Publish) bool {
	r := p.unusedDeclared.Load()
	if r == nil || r.To >= pub.FirstSeq {
		return false
	}
	pub.UnusedFrom, pub.UnusedTo = r.From, r.To
	return true
}

// declareUnusedKept sets the declared range on a KeepAlive, and reports
// whether it did.
func (p *Publisher) declareUnusedKept(ka *wire.KeepAlive) bool {
	r := p.unusedDeclared.Load()
	if r == nil {
		return false
	}
	ka.UnusedFrom, ka.UnusedTo = r.From, r.To
	return true
}
