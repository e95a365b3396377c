package clientserver

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
// and the early answer (package proposal) goes out as soon as the FSM decides
// the entry. Under "all-active" and "all" the answer waits, after that,
// until the members the rule names have the entry in their raft logs, as
// their answers to the leader said (MemberLogs: the store reads them off
// raft's answers on its transport):
//
//   - all-active: every running member, a member being running while the
//     leader has heard from it within a few heartbeat timeouts. A slow member
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

// intragroupRecheck is how often a waiting answer looks at the members
// again without news (a member going quiet is news only by its silence).
const intragroupRecheck = 50 * time.Millisecond

// Intragroup is what the client server needs for the intragroup
// behaviours.
type Intragroup struct {
	Floor   quorum.Intragroup // Config.Intragroup: the deployment's
	Members MemberLogs        // what the members' answers said; nil: the commit is enough
}

// MemberLogs is what the leader knows of the other members' raft logs, as
// their answers to it said.
type MemberLogs interface {
	// Changed returns a channel closed at the next advance of a member's log.
	Changed() <-chan struct{}
	// Held reports whether the members behaviour b names hold the entry at
	// index, and each other member as the rule sees it now.
	Held(b quorum.Intragroup, index uint64, now time.Time) (met bool, views []MemberView)
}

// MemberView is one other member as a wait sees it.
type MemberView struct {
	Name    string
	Running bool          // heard from within the running window
	Holds   bool          // its log holds the entry
	Quiet   time.Duration // since it was last heard from
}

// setIntragroup records the behaviour a registration of source on conn
// gets: the stricter of the deployment's and asked ("" asks nothing). It
// returns that behaviour's name, for Registered.
func (cs *Server) setIntragroup(conn *connState, source, asked string) (string, error) {
	b, err := cs.intragroupFor(asked)
	if err != nil {
		return "", err
	}
	if conn.intragroup == nil {
		conn.intragroup = map[string]quorum.Intragroup{}
	}
	conn.intragroup[source] = b
	return b.String(), nil
}

// intragroupFor is the behaviour a registration asking for asked gets: the
// stricter of the deployment's and asked ("" asks nothing).
func (cs *Server) intragroupFor(asked string) (quorum.Intragroup, error) {
	b := cs.Intragroup.Floor
	if asked != "" {
		want, err := quorum.ParseIntragroupBehavior(asked)
		if err != nil {
			return 0, fmt.Errorf("%w: ask for quorum, all-active or all", err)
		}
		b = max(b, want)
	}
	return b, nil
}

// membersDown refuses a registration under intragroup all while a member
// of the group is not running (UM does not complete such a registration:
// the group could confirm nothing until the member is back). It returns
// the Error to answer, naming the missing stores and what to do, or nil.
// A new leader counts every member as just heard from (raftport's
// Progress), so a registration right after an election is not refused
// for a member the leader has not had the time to hear from.
func (cs *Server) membersDown(reqID uint64, b quorum.Intragroup) *wire.Error {
	if b != quorum.IntragroupAll || cs.Intragroup.Members == nil {
		return nil
	}
	_, views := cs.Intragroup.Members.Held(b, 0, time.Now())
	var down []string
	for _, v := range views {
		if !v.Running {
			down = append(down, fmt.Sprintf("%s (not heard from for %v)", v.Name, v.Quiet.Round(time.Second)))
		}
	}
	if len(down) == 0 {
		return nil
	}
	verb := "is"
	if len(down) > 1 {
		verb = "are"
	}
	return &wire.Error{ReqID: reqID, Code: wire.CodeMembersDown, Message: fmt.Sprintf(
		"store %s of group %d does not complete the registration: intragroup all needs every store of the group, and %s %s not running; start it (the publisher registers once it is back), or publish with intragroup all-active or quorum",
		cs.Name, cs.Group, strings.Join(down, ", "), verb)}
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
func (cs *Server) holdFor(ctx context.Context, conn *connState, source string) *memberHold {
	b, ok := conn.intragroup[source]
	if !ok {
		b = cs.Intragroup.Floor
	}
	if b == quorum.IntragroupQuorum || cs.Intragroup.Members == nil {
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
func (cs *Server) awaitMembers(c *wire.Conn, h *memberHold, f raft.ApplyFuture, msg wire.Message) (_ wire.Message, ok bool) {
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
	d := cs.Intragroup
	start := time.Now()
	var noticed time.Time
	tick := time.NewTicker(intragroupRecheck)
	defer tick.Stop()
	for {
		if !cs.IsLeader() {
			return cs.redirect(reqID), true
		}
		changed := d.Members.Changed()
		now := time.Now()
		met, views := d.Members.Held(h.behavior, index, now)
		if met {
			return msg, true
		}
		if now.Sub(start) >= paceNotice && now.Sub(noticed) >= paceNotice {
			why := holdReason(h.behavior, views)
			if noticed.IsZero() {
				cs.Log.Info("holding acknowledgements back: the intragroup behaviour needs more stores", "source", h.source, "intragroup", h.behavior.String(), "why", why)
			}
			noticed = now
			cs.TouchSource(h.source, h.session, now)
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
func holdReason(b quorum.Intragroup, views []MemberView) string {
	var waiting []string
	for _, v := range views {
		switch {
		case v.Holds:
		case v.Running:
			waiting = append(waiting, v.Name+" has not stored them yet")
		case b == quorum.IntragroupAll:
			waiting = append(waiting, fmt.Sprintf("%s is not running (not heard from for %v)", v.Name, v.Quiet.Round(time.Second)))
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
