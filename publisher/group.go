package publisher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"umstore/internal/groupclient"
	"umstore/quorum"
	"umstore/wire"
)

// registerTimeout bounds one registration round trip (it goes through the
// group's raft log); dialTimeout one store's connection and handshake.
// Both are short: a store that takes longer is paused or cut off, and
// another may lead by now.
const (
	registerTimeout = 3 * time.Second
	dialTimeout     = time.Second
	// learnInterval is how often a connected publisher asks the leader
	// where the group's members listen (groupclient.Learn: a host replaced
	// at another address is found there even once no store of the list
	// answers).
	learnInterval = 2 * time.Second
)

// group manages the publisher's connection to one store group: find the
// leader, register, stream every message the group has not confirmed, and
// start over on any failure.
type group struct {
	p      *Publisher
	index  int                 // 0-based
	client *groupclient.Client // finds the leader; remembers it across connections
	wake   chan struct{}

	mu        sync.Mutex
	lastHeard time.Time // when the group last answered anything on this connection (an Ack, a Pong)
	pingSent  time.Time // when the Ping awaiting its Pong was sent; zero when none is
	noPing    bool      // the store does not know Ping (an older store): none is sent
	checked   bool      // checkDeployment passed
	conn      wire.FrameConn
	sessions  int // registered connections so far

	wait ackWait // how long the group may stay silent (ackwait.go); the group's goroutine only

	intragroupWarned bool // the group was told it does not apply Config.Intragroup (guarded by p.mu)
	refusedWarned    bool // a refusal of the group was logged (guarded by p.mu)
}

func (g *group) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *group) closeConn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn != nil {
		g.conn.Close()
	}
}

// goodbye tells the group's leader this publisher is leaving, so its
// source is free at once rather than after the activity timeout.
func (g *group) goodbye() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return
	}
	_ = g.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = g.conn.Send(&wire.KeepAlive{Source: g.p.cfg.Source, Session: g.p.session, Leaving: true})
}

func (g *group) run() {
	p := g.p
	for p.ctx.Err() == nil && !p.stopped() {
		c, reg, err := g.connect()
		if err != nil {
			g.failed(err)
			p.log.Debug("store group unreachable", "group", g.index+1, "err", err)
			g.pause()
			continue
		}
		g.mu.Lock()
		g.conn = c
		g.sessions++
		g.mu.Unlock()
		if p.ctx.Err() != nil {
			c.Close()
			return
		}
		g.registered(reg)
		if g.wait.registered(g.client.Leader()) {
			p.log.Info("the leader that stopped answering leads again: it was slow, not gone; waiting longer for its answers", "group", g.index+1, "ack_timeout", g.wait.current)
		}
		err = g.stream(c)
		if a, ok := c.(abandoner); ok && errors.Is(err, errNotServing) {
			a.Abandon()
		}
		c.Close()
		p.mu.Lock()
		p.stats.Connected[g.index] = false
		if p.tracker != nil {
			p.tracker.SetActive(g.index, false)
		}
		p.mu.Unlock()
		if p.ctx.Err() == nil {
			p.log.Info("connection to store group lost; reconnecting", "group", g.index+1, "err", err)
		}
		g.pause()
	}
}

// learn asks the group's leader where its members listen, every
// learnInterval while the group is connected, until the publisher closes.
func (g *group) learn() {
	g.client.KeepLearning(g.p.ctx, learnInterval, g.connected, g.p.log)
}

// learnNow is one round of learn, for the learner of shared connections:
// it asks only while the group is connected.
func (g *group) learnNow() {
	if !g.connected() {
		return
	}
	if err := g.client.Learn(g.p.ctx); err != nil {
		g.p.log.Debug("could not ask the group where its members listen", "group", g.index+1, "err", err)
	}
}

// connected reports whether the group has a registered connection.
func (g *group) connected() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn != nil
}

func (g *group) pause() {
	select {
	case <-g.p.ctx.Done():
	case <-time.After(g.p.cfg.ReconnectDelay):
	}
}

// connect registers with the group's leader (found and followed by the
// group client) and returns the registered connection. A leader's "source
// busy" ends the attempt at once: no other store will say otherwise.
func (g *group) connect() (wire.FrameConn, *wire.Registered, error) {
	p := g.p
	if err := g.checkDeployment(); err != nil {
		if errors.Is(err, wire.ErrTLSRefused) {
			err = fmt.Errorf("%w: %w", ErrRefused, err) // err names the group
		}
		return nil, nil, err
	}
	var req wire.Message = &wire.Register{ReqID: 1, Source: p.cfg.Source, Session: p.session}
	if p.cfg.ReceiverPaced != PacingNone || p.cfg.ConfirmedDelivery > 0 || p.cfg.Intragroup != quorum.IntragroupQuorum {
		rs := &wire.RegisterSource{ReqID: 1, Source: p.cfg.Source, Session: p.session, Pacing: string(p.cfg.ReceiverPaced), Delivery: p.cfg.ConfirmedDelivery > 0}
		if p.cfg.Intragroup != quorum.IntragroupQuorum {
			rs.Intragroup = p.cfg.Intragroup.String()
		}
		req = rs
	}
	done, err := p.cfg.Connections.startRegistering(p.ctx, g.index)
	if err != nil {
		return nil, nil, err
	}
	c, m, err := g.client.Open(p.ctx, req, groupclient.OpenOptions{
		Reply:       wire.TypeRegistered,
		Timeout:     registerTimeout,
		NextOnError: func(e *wire.Error) bool { return !refusedByAny(e.Code) && e.Code != wire.CodeMembersDown },
	})
	done()
	if err != nil {
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Code == wire.CodeBusy:
			return nil, nil, fmt.Errorf("%w: %s", ErrSourceBusy, we.Message)
		case errors.As(err, &we) && we.Code == wire.CodeFenced:
			return nil, nil, fmt.Errorf("%w: group %d: %s", ErrFenced, g.index+1, we.Message)
		case errors.As(err, &we) && we.Code == wire.CodeMembersDown:
			return nil, nil, fmt.Errorf("%w: group %d: %s", ErrMembersDown, g.index+1, we.Message)
		case errors.As(err, &we) && refusedByAny(we.Code):
			return nil, nil, fmt.Errorf("%w: group %d: %s", ErrRefused, g.index+1, we.Message)
		case errors.Is(err, wire.ErrTLSRefused):
			return nil, nil, fmt.Errorf("%w: %w", ErrRefused, err) // err names the group
		case errors.Is(err, groupclient.ErrWrongGroup):
			return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return nil, nil, err
	}
	reg := m.(*wire.Registered)
	if applied := appliedIntragroup(reg); applied < p.cfg.Intragroup {
		c.Close()
		return nil, nil, fmt.Errorf("%w: group %d applies intragroup %s, this publisher asks for %s: upgrade its stores", ErrIntragroup, g.index+1, applied, p.cfg.Intragroup)
	}
	return c, reg, nil
}

// refusedByAny reports whether a leader's refusal with code is one every
// store of the deployment would give: the source is busy, a later
// incarnation holds it, or the request asks for what the stores do not
// do, or the client's identity may not publish it. Open stops at it
// rather than trying the next store.
func refusedByAny(code string) bool {
	switch code {
	case wire.CodeBusy, wire.CodeFenced, wire.CodeBadRequest, wire.CodeVersion, wire.CodeForbidden:
		return true
	}
	return false
}

// appliedIntragroup is the intragroup behaviour a group says it applies to
// the registration; a store older than the field applies quorum, and says
// nothing (or a name this publisher does not know: taken as quorum too, the
// least it can be).
func appliedIntragroup(reg *wire.Registered) quorum.Intragroup {
	b, err := quorum.ParseIntragroupBehavior(reg.Intragroup)
	if err != nil {
		return quorum.IntragroupQuorum
	}
	return b
}

// checkDeployment asks a store of the group, once, how many groups its
// deployment has, and refuses a publisher given fewer: it would publish
// into part of the deployment only, and another publisher given the other
// groups could write the same source there (the groups would then hold
// other payloads for the same sequence numbers). It runs before the first
// registration, so a refused publisher holds no source. An older store
// that does not know Ping is not checked.
func (g *group) checkDeployment() error {
	if g.checked {
		return nil
	}
	ctx, cancel := context.WithTimeout(g.p.ctx, registerTimeout)
	defer cancel()
	m, err := g.client.Call(ctx, &wire.Ping{})
	g.client.Close()
	var we *wire.Error
	switch {
	case errors.As(err, &we) && we.Code == wire.CodeUnknown:
	case err != nil:
		if errors.Is(err, groupclient.ErrWrongGroup) {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return err
	default:
		pong, ok := m.(*wire.Pong)
		if n := len(g.p.cfg.Groups); ok && pong.Groups > n {
			return fmt.Errorf("%w: store %s says its deployment has %d groups, and this publisher was given the stores of %d: it would publish into part of the deployment only; give every group's stores (each with its group index) or the deployment file",
				ErrConfig, pong.Store, pong.Groups, n)
		}
		if ok && pong.Group != 0 {
			if other, dup := g.p.claimDeploymentGroup(g.index, pong.Group); dup {
				return fmt.Errorf("%w: the stores given as groups %d and %d of this publisher's list are both stores of the deployment's group %d: list every group's stores under its own index (or use the deployment file)",
					ErrConfig, other+1, g.index+1, pong.Group)
			}
		}
	}
	g.checked = true
	return nil
}

// fatal reports whether err ends the publisher rather than one attempt.
func fatal(err error) bool {
	return errors.Is(err, ErrFenced) || errors.Is(err, ErrConfig)
}

// registered records a registration answer.
func (g *group) registered(reg *wire.Registered) {
	p := g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Connected[g.index] = true
	select {
	case <-p.decided:
	default:
		// Before the decision: the answer goes to the resume decision.
		p.replyLocked(groupReply{group: g.index, answered: true, highSeq: reg.HighSeq, lowSeq: reg.LowSeq, groupID: reg.GroupID, intragroup: appliedIntragroup(reg)})
		p.broadcastLocked()
		return
	}
	p.tracker.SetActive(g.index, true)
	p.lateAnswerLocked(g.index, reg.HighSeq)
	if reg.HighSeq >= p.nextSeq && p.tracker.Confirmed(g.index) < p.firstSeq {
		// This group answered after the resume point was chosen, and holds
		// sequence numbers this session has not sent yet: it will send
		// them again, with other payloads. (Numbers it has sent, from
		// firstSeq on, the group may hold from another group's repair or an
		// earlier connection; a payload of another publisher among them is
		// refused as a conflict on its Ack.)
		p.stats.LateHigherGroup++
		p.log.Error("a store group that answered late holds sequence numbers beyond the resume point: they may have been reused", "group", g.index+1, "group_high_seq", reg.HighSeq, "resume_seq", p.firstSeq, "next_seq", p.nextSeq)
	}
	p.broadcastLocked()
}

// failed records a failed registration attempt that says something about
// the others: the group refused the token (every store checks the same
// one), or its leader said another live publisher holds the source. Before
// the decision the resume decision hears of it; a busy source is also worth
// a warning, once; so does a group without a leader whose stores say for
// how long (groupclient.LeaderlessError: past an election's length it lost
// its majority, and the decision need not wait for it). Other failures (a
// store down, an election) leave the group silent.
func (g *group) failed(err error) {
	p := g.p
	if fatal(err) {
		p.failFatally(err)
		return
	}
	var we *wire.Error
	unavailable := errors.As(err, &we) && we.Code == wire.CodeUnavailable
	var ll *groupclient.LeaderlessError
	leaderless := errors.As(err, &ll)
	membersDown := errors.Is(err, ErrMembersDown)
	if !errors.Is(err, wire.ErrUnauthorized) && !errors.Is(err, ErrSourceBusy) && !errors.Is(err, ErrIntragroup) && !errors.Is(err, ErrRefused) && !unavailable && !leaderless && !membersDown {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if errors.Is(err, ErrSourceBusy) && !p.busyWarned {
		p.busyWarned = true
		p.log.Warn("waiting: another live publisher holds the source", "group", g.index+1, "detail", err)
	}
	if errors.Is(err, ErrRefused) && !g.refusedWarned {
		g.refusedWarned = true
		p.log.Error("a store group refused the registration", "group", g.index+1, "detail", err)
	}
	if membersDown && !g.refusedWarned {
		// Intragroup all with a store of the group down: the group does
		// not take the registration until the store is back.
		g.refusedWarned = true
		p.log.Error("a store group did not complete the registration: a store of the group is down (tried again while the publisher runs)", "group", g.index+1, "detail", err)
	}
	if unavailable && !g.refusedWarned {
		// Over a store's limit, say: it may pass, so the group is tried
		// again, but the user hears why now, not at the time-out.
		g.refusedWarned = true
		p.log.Warn("a store group cannot take the registration now; trying again", "group", g.index+1, "detail", err)
	}
	if errors.Is(err, ErrIntragroup) && !g.intragroupWarned {
		g.intragroupWarned = true
		p.log.Error("a store group cannot confirm messages under the intragroup behaviour asked for: it stays unregistered", "group", g.index+1, "detail", err)
	}
	select {
	case <-p.decided:
	default:
		p.replyLocked(groupReply{group: g.index, err: err})
		p.broadcastLocked()
	}
}

// claimDeploymentGroup records that the publisher's group index (its
// place in the store list) is the deployment's group dg, and reports the
// other index already recorded for dg, if any: two entries of a store list
// naming one deployment group would count one group's confirmations twice.
func (p *Publisher) claimDeploymentGroup(index, dg int) (other int, dup bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deploymentGroups == nil {
		p.deploymentGroups = map[int]int{}
	}
	if o, seen := p.deploymentGroups[dg]; seen && o != index {
		return o, true
	}
	p.deploymentGroups[dg] = index
	return 0, false
}
