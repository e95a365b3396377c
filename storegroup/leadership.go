package storegroup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/version"
	"umstore/placement"
	"umstore/wire"
)

// What the leader does with its members besides replicating to them: it
// pings each one every memberCheckInterval (wire Ping, answered at once by
// any store), moves leadership to the preferred host when the decision
// (leadership_decision.go) says so, and compares the policy each member
// runs with its own.

const (
	// memberCheckInterval is how often the leader pings its members.
	memberCheckInterval = time.Second
	// memberPingTimeout bounds one member's answer: a member that takes
	// longer (paused, cut off) counts as not caught up.
	memberPingTimeout = 800 * time.Millisecond
	// caughtUpLag is how many entries behind the leader a member may have
	// applied and still count as caught up for a move: raft's transfer
	// sends it the rest before handing over.
	caughtUpLag = 512
)

// memberWatch is the leader's view of its members.
type memberWatch struct {
	mu        sync.Mutex
	states    map[string]memberState
	mismatch  map[string]string // member -> what differs in its policy; logged once per value
	placement string            // the last decision's why, for status
	lastMove  time.Time
}

func newMemberWatch() *memberWatch {
	return &memberWatch{states: map[string]memberState{}, mismatch: map[string]string{}}
}

// snapshot returns the placement text and the policy mismatches, sorted.
func (w *memberWatch) snapshot() (string, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, diff := range w.mismatch {
		out = append(out, name+": "+diff)
	}
	slices.Sort(out)
	return w.placement, out
}

// forget clears what a former leader knew; the next leader starts afresh.
func (w *memberWatch) forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.states = map[string]memberState{}
	w.mismatch = map[string]string{}
	w.placement = ""
}

// watchMembers runs on every store; it acts while the store leads.
func (s *Store) watchMembers() {
	links := map[string]*memberLink{}
	defer func() {
		for _, l := range links {
			l.close()
		}
	}()
	for _, m := range s.otherMembers() {
		links[m.Name] = &memberLink{member: m, dialer: s.dialer(memberPingTimeout)}
	}
	tick := time.NewTicker(memberCheckInterval)
	defer tick.Stop()
	leading := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		if !s.IsLeader() {
			if leading {
				leading = false
				s.members.forget()
				s.levels.set(nil)
			}
			continue
		}
		leading = true
		for _, m := range s.otherMembers() {
			links[m.Name].follow(m) // a replaced host's member where it listens now
		}
		pongs := pingAll(s.ctx, links)
		s.noteMembers(pongs, time.Now())
		s.checkPolicies(pongs)
		s.raiseLevel(pongs)          // levels.go
		s.proposer.ProposeWithheld() // what the level held back, once raised
		s.gateTestTick()             // gatetest_*.go: nothing outside the gate test
		s.placeLeadership(time.Now())
	}
}

// pingAll pings every member at once and returns the answers by name (a
// member that did not answer is absent).
func pingAll(ctx context.Context, links map[string]*memberLink) map[string]*wire.Pong {
	var mu sync.Mutex
	out := map[string]*wire.Pong{}
	var wg sync.WaitGroup
	for name, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p, err := l.ping(ctx); err == nil {
				mu.Lock()
				out[name] = p
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// noteMembers updates each member's caught-up run from its answer.
func (s *Store) noteMembers(pongs map[string]*wire.Pong, now time.Time) {
	var ref uint64
	if r := s.raftNode(); r != nil {
		ref = r.AppliedIndex()
	}
	w := s.members
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range s.otherMembers() {
		p, ok := pongs[m.Name]
		st := w.states[m.Name]
		if !ok || p.CatchingUp || p.AppliedIndex+caughtUpLag < ref {
			st.caughtUpSince = time.Time{}
		} else if st.caughtUpSince.IsZero() {
			st.caughtUpSince = now
		}
		if ok {
			st.applied = p.AppliedIndex
		}
		w.states[m.Name] = st
	}
}

// placeLeadership decides whether to move leadership to the preferred
// host, and does.
func (s *Store) placeLeadership(now time.Time) {
	w := s.members
	w.mu.Lock()
	in := moveInput{
		now: now, self: s.cfg.Name, host: s.cfg.PreferredHost, preferred: s.cfg.PreferredMembers,
		members: w.states, settle: s.cfg.LeaderSettle, minInterval: s.cfg.LeaderMinInterval, lastMove: w.lastMove,
	}
	d := in.decide()
	w.placement = d.why
	if d.target != "" {
		w.lastMove = now
	}
	w.mu.Unlock()
	if d.target == "" {
		return
	}
	m, ok := s.currentMember(d.target)
	r := s.raftNode()
	if !ok || r == nil {
		return
	}
	s.log.Info("moving leadership to the group's preferred host", "to", m.Name, "host", s.cfg.PreferredHost, "why", d.why)
	if err := r.LeadershipTransferToServer(raft.ServerID(m.Name), raft.ServerAddress(m.RaftAddr)).Error(); err != nil {
		s.log.Warn("moving leadership to the preferred host failed; will try again later", "to", m.Name, "err", err)
		return
	}
	s.metrics.leaderMoves.Add(1)
}

// checkPolicies compares the policy each member runs with this store's
// and warns, once per member and difference, when they differ: the group
// then behaves differently depending on which store leads.
func (s *Store) checkPolicies(pongs map[string]*wire.Pong) {
	if s.cfg.PolicyDigest == "" {
		return
	}
	w := s.members
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, p := range pongs {
		if p.PolicyDigest == "" || p.PolicyDigest == s.cfg.PolicyDigest {
			delete(w.mismatch, name)
			continue
		}
		diff := strings.Join(placement.PolicyDiff(s.cfg.Policy, p.Policy), "; ")
		if diff == "" {
			diff = fmt.Sprintf("policy %s, this store's %s", p.PolicyDigest, s.cfg.PolicyDigest)
		}
		if w.mismatch[name] != diff {
			s.log.Warn("a member of the group runs another policy than this store (its deployment file differs, or a flag of its daemon overrides the file): the group behaves differently depending on which store leads; give every host the same deployment file",
				"member", name, "differences", diff)
		}
		w.mismatch[name] = diff
	}
}

// pong answers a Ping.
func (s *Store) pong(reqID uint64) *wire.Pong {
	p := &wire.Pong{ReqID: reqID, Store: s.cfg.Name, Group: s.cfg.Group, Groups: len(s.cfg.OtherGroups) + 1,
		Leading: s.IsLeader(), PolicyDigest: s.cfg.PolicyDigest, Policy: s.cfg.Policy,
		FormatLevel: uint64(s.formatLevel()), ActiveLevel: uint64(s.activeLevel()), Version: version.String()}
	if r := s.raftNode(); r != nil {
		p.AppliedIndex, p.LastIndex = r.AppliedIndex(), r.LastIndex()
	}
	if l, ok := s.leader(); ok {
		p.Leader, p.LeaderName = l.ClientAddr, l.Name
	}
	if s.port != nil {
		p.CatchingUp, _ = s.port.Gate().State()
	}
	return p
}

// memberLink is the leader's kept connection to one member for pings.
type memberLink struct {
	member Member
	dialer *wire.Dialer
	conn   *wire.Conn
	reqID  uint64
}

// ping asks the member for a Pong within memberPingTimeout, dialing when
// the link is closed; any failure closes it for the next ping to redial.
func (l *memberLink) ping(ctx context.Context) (*wire.Pong, error) {
	ctx, cancel := context.WithTimeout(ctx, memberPingTimeout)
	defer cancel()
	if l.conn == nil {
		c, _, err := l.dialer.Dial(ctx, l.member.ClientAddr)
		if err != nil {
			return nil, err
		}
		l.conn = c
	}
	l.reqID++
	deadline, _ := ctx.Deadline()
	_ = l.conn.NetConn().SetDeadline(deadline)
	m, err := func() (wire.Message, error) {
		if err := l.conn.Send(&wire.Ping{ReqID: l.reqID}); err != nil {
			return nil, err
		}
		return l.conn.Read()
	}()
	if err != nil {
		l.close()
		return nil, err
	}
	p, ok := m.(*wire.Pong)
	if !ok || p.ReqID != l.reqID {
		l.close()
		return nil, fmt.Errorf("%w: member %s answered a ping with frame type %d", wire.ErrMalformed, l.member.Name, m.Type())
	}
	return p, nil
}

// follow points the link at the member's current address, closing a
// connection to the one it had.
func (l *memberLink) follow(m Member) {
	if l.member.ClientAddr != m.ClientAddr {
		l.close()
	}
	l.member = m
}

func (l *memberLink) close() {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}
