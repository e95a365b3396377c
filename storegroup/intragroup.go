package storegroup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"umstore/quorum"
	"umstore/wire"
)

// Intragroup stability (UM ume_retention_intragroup_stability_behavior):
// which members of the group must hold a Publish before the leader
// acknowledges it. Under "quorum", the default, the raft commit is enough,
// and the early answer (proposer.go) goes out as soon as the FSM decides
// the entry. Under "all-active" and "all" the answer waits, after that,
// until the members the rule names have the entry in their raft logs, as
// their answers to the leader said (members.go):
//
//   - all-active: every running member, a member being running while the
//     leader has heard from it within memberRunningWindow. A slow member
//     holds every answer back; a member that stops answering stops
//     counting once the window has passed, so its loss delays the answers
//     by at most the window.
//   - all: every member. While one is down the group acknowledges nothing
//     (under intergroup "any" the other groups still can).
//
// Where it is set: the deployment's stability.intragroup (Config.Intragroup)
// is the least a source gets, and a publisher may ask for a stricter one
// for its source when it registers (RegisterSource.Intragroup), as UM's is
// a source option. The behaviour belongs to the registration on the
// connection, not to the replicated state: nothing in the log changes, a
// publisher registers again on every connection, and the answer tells it
// what the group applies (Registered.Intragroup).
//
// While an answer waits, the connection's window slot stays taken, so the
// publisher is slowed down as by a slow commit, and every second the
// leader tells it why (HeldBack) and counts it as active, as receiver-paced
// persistence does (pacing.go).

// memberRunningHeartbeats is how many heartbeat timeouts of silence make a
// member not running, for all-active. raft heartbeats every tenth of the
// timeout, so a running member is heard from many times in the window.
const memberRunningHeartbeats = 3

// intragroupRecheck is how often a waiting answer looks at the members
// again without news (a member going quiet is news only by its silence).
const intragroupRecheck = 50 * time.Millisecond

// intragroupDeps is what the client server needs for the intragroup
// behaviours.
type intragroupDeps struct {
	floor   quorum.Intragroup // Config.Intragroup: the deployment's
	members *memberProgress   // what the members' answers said
	others  []string          // the other members' names
	window  time.Duration     // a member is running while heard from within it
	term    func() uint64     // the raft node's current term; 0 before it runs
}

// intragroupDeps records the members' answers on the store's transport and
// returns what the client server needs to wait for them. It runs before
// raft starts.
func (s *Store) intragroupDeps() intragroupDeps {
	mp := newMemberProgress()
	s.rtrans.members = mp
	d := intragroupDeps{
		floor:   s.cfg.Intragroup,
		members: mp,
		window:  memberRunningHeartbeats * s.cfg.HeartbeatTimeout,
		term: func() uint64 {
			if r := s.raftNode(); r != nil {
				return r.CurrentTerm()
			}
			return 0
		},
	}
	for _, m := range s.cfg.Members {
		if m.Name != s.cfg.Name {
			d.others = append(d.others, m.Name)
		}
	}
	return d
}

// setIntragroup records the behaviour a registration of source on conn
// gets: the stricter of the deployment's and asked ("" asks nothing). It
// returns that behaviour's name, for Registered.
func (cs *clientServer) setIntragroup(conn *connState, source, asked string) (string, error) {
	b := cs.intragroup.floor
	if asked != "" {
		want, err := quorum.ParseIntragroupBehavior(asked)
		if err != nil {
			return "", fmt.Errorf("%w: ask for quorum, all-active or all", err)
		}
		b = max(b, want)
	}
	if conn.intragroup == nil {
		conn.intragroup = map[string]quorum.Intragroup{}
	}
	conn.intragroup[source] = b
	return b.String(), nil
}

// memberHold is what a Publish answer waits for beyond the commit: the
// members its source's behaviour names.
type memberHold struct {
	ctx      context.Context // the connection's: the wait ends with it
	behavior quorum.Intragroup
	source   string
	session  string
}

// holdFor returns what answers to conn's Publish frames of source wait
// for, or nil when the commit is enough (quorum).
func (cs *clientServer) holdFor(ctx context.Context, conn *connState, source string) *memberHold {
	b, ok := conn.intragroup[source]
	if !ok {
		b = cs.intragroup.floor
	}
	if b == quorum.IntragroupQuorum || cs.intragroup.members == nil {
		return nil
	}
	return &memberHold{ctx: ctx, behavior: b, source: source, session: conn.sessions[source]}
}

// awaitMembers holds msg, the answer to a Publish proposed as f, until the
// members h names hold f's entry. It returns the answer to write: msg, or a
// redirect if this store stopped leading meanwhile (the publisher sends the
// frame again to the new leader, where it is a no-op that waits in turn).
// ok is false when the connection closed first. Answers that are not an
// Ack or a Nak (errors) go out at once.
func (cs *clientServer) awaitMembers(c *wire.Conn, h *memberHold, f raft.ApplyFuture, msg wire.Message) (_ wire.Message, ok bool) {
	var reqID uint64
	switch m := msg.(type) {
	case *wire.Ack:
		reqID = m.ReqID
	case *wire.Nak:
		reqID = m.ReqID
	default:
		return msg, true
	}
	index := f.Index()
	d := cs.intragroup
	start := time.Now()
	var noticed time.Time
	tick := time.NewTicker(intragroupRecheck)
	defer tick.Stop()
	for {
		if !cs.isLeader() {
			return cs.redirect(reqID), true
		}
		changed := d.members.changed()
		now := time.Now()
		views := d.members.view(d.others, d.term(), index, now, d.window)
		if met(h.behavior, views) {
			return msg, true
		}
		if now.Sub(start) >= paceNotice && now.Sub(noticed) >= paceNotice {
			why := holdReason(h.behavior, views)
			if noticed.IsZero() {
				cs.log.Info("holding acknowledgements back: the intragroup behaviour needs more stores", "source", h.source, "intragroup", h.behavior.String(), "why", why)
			}
			noticed = now
			cs.sessions.touch(h.source, h.session, now)
			if err := c.Send(&wire.HeldBack{Source: h.source, Reason: why}); err != nil {
				return nil, false
			}
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-h.ctx.Done():
			return nil, false
		}
	}
}

// holdReason says, for a held-back publisher, which members the answer
// waits for.
func holdReason(b quorum.Intragroup, views []memberView) string {
	var waiting []string
	for _, v := range views {
		switch {
		case v.holds:
		case v.running:
			waiting = append(waiting, v.name+" has not stored them yet")
		case b == quorum.IntragroupAll:
			waiting = append(waiting, fmt.Sprintf("%s is not running (not heard from for %v)", v.name, v.quiet.Round(time.Second)))
		}
	}
	what := "every running store of the group holds the messages"
	if b == quorum.IntragroupAll {
		what = "every store of the group holds the messages; with one down the group acknowledges nothing until it is back"
	}
	if len(waiting) == 0 {
		waiting = append(waiting, "too few stores hold them")
	}
	return fmt.Sprintf("intragroup %s: acknowledged once %s: %s", b, what, strings.Join(waiting, ", "))
}
