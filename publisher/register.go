package publisher

import (
	"context"
	"errors"

	"umstore/quorum"
)

// Registration says how the resume point was chosen.
type Registration struct {
	ResumeSeq uint64        // first sequence number of this session
	Groups    []GroupAnswer // one per configured group
	// StateFileSeq is the last stable sequence number from the state file
	// (0 without one); the resume point is past it too.
	StateFileSeq uint64
}

// GroupAnswer is one group's answer to the registration.
type GroupAnswer struct {
	Group    int    // 1-based
	Answered bool   // answered before the resume point was chosen
	HighSeq  uint64 // highest sequence number it held
	GroupID  string // its identity
	// Intragroup is the intragroup behaviour the group applies to this
	// publisher's messages: Config.Intragroup, or the deployment's if
	// stricter.
	Intragroup quorum.Intragroup
}

// errWaitOver is the cause of register's bounded wait ending: past it,
// enough answers for the intergroup behaviour will do.
var errWaitOver = errors.New("RegisterTimeout passed")

// register waits for the groups' registration answers (gathered by each
// group's goroutine, see group.registered and group.failed), asking
// decideResume after every change, and puts its decision into effect.
func (p *Publisher) register(ctx context.Context) error {
	wait, cancel := context.WithTimeoutCause(ctx, p.cfg.RegisterTimeout, errWaitOver)
	defer cancel()
	for {
		p.mu.Lock()
		in := resumeInput{
			source:   p.cfg.Source,
			behavior: p.cfg.Intergroup,
			groups:   len(p.cfg.Groups),
			replies:  p.replies,
			state:    p.state,
			settled:  p.settledBefore,
			waitOver: context.Cause(wait) == errWaitOver,
			ended:    ctx.Err(),
		}
		d := decideResume(in)
		if p.fatal != nil && d.err == nil {
			d = resumeDecision{err: p.fatal}
		}
		ch := p.changed
		if !d.wait && d.err == nil {
			p.resumeLocked(d)
		}
		p.mu.Unlock()
		if !d.wait {
			return d.err
		}
		done := wait.Done()
		if in.waitOver {
			done = ctx.Done() // now only the caller's context bounds the wait for enough answers
		}
		select {
		case <-ch:
		case <-done:
		}
	}
}

// replyLocked records what a group told the registration: one entry per
// group, kept in the order groups first reported. An answer stands over a
// later failure; a group that registers again before the decision (it
// reconnected) counts once, with the highest HighSeq it answered. Caller
// holds p.mu.
func (p *Publisher) replyLocked(r groupReply) {
	for i, old := range p.replies {
		if old.group != r.group {
			continue
		}
		switch {
		case old.answered && r.answered:
			p.replies[i].highSeq = max(old.highSeq, r.highSeq)
		case old.answered:
		default:
			p.replies[i] = r
		}
		return
	}
	p.replies = append(p.replies, r)
}

// resumeLocked puts the resume decision into effect: the session starts at
// d.seq, the state file learns the groups' identities, and the groups'
// senders may start. Caller holds p.mu.
func (p *Publisher) resumeLocked(d resumeDecision) {
	n := len(p.cfg.Groups)
	for _, w := range d.warnings {
		p.log.Log(context.Background(), w.level, w.msg, w.attrs...)
	}
	p.reg.Groups = make([]GroupAnswer, n)
	for g := range p.reg.Groups {
		p.reg.Groups[g].Group = g + 1
	}
	for _, r := range p.replies {
		if !r.answered {
			continue
		}
		p.reg.Groups[r.group] = GroupAnswer{Group: r.group + 1, Answered: true, HighSeq: r.highSeq, GroupID: r.groupID, Intragroup: r.intragroup}
		if p.state != nil && r.groupID != "" {
			p.state.Groups[r.group+1] = r.groupID
		}
	}
	if p.state != nil {
		p.reg.StateFileSeq = p.state.LastStable
	}
	// Past everything sent before: every group answered, or the state
	// file said nothing was sent beyond its last stable number.
	p.resumedPastAll = len(d.answered) == n || p.settledBefore
	p.firstSeq, p.nextSeq, p.delivered = d.seq, d.seq, d.seq-1
	p.holdUnusedLocked(d) // declared once every group has said what it holds (unused.go)
	p.flight.reset(d.seq - 1)
	p.reg.ResumeSeq = d.seq
	p.tracker = quorum.NewTracker(p.cfg.Intergroup, n, p.firstSeq)
	p.retained.first = p.firstSeq
	p.stats.Stable = d.seq - 1
	for g := range p.groups {
		if !p.stats.Connected[g] {
			p.tracker.SetActive(g, false)
		}
	}
	close(p.decided)
	p.log.Info("registered", "resume_seq", p.firstSeq, "groups_answered", d.answered, "groups", n)
}

// Registration reports how the resume point was chosen: which groups
// answered, with what, and the state file's memory.
func (p *Publisher) Registration() Registration {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reg
	r.Groups = append([]GroupAnswer(nil), p.reg.Groups...)
	return r
}
