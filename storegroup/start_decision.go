package storegroup

import (
	"cmp"
	"fmt"
	"slices"

	"umstore/storegroup/raftport"
	"umstore/wire"
)

// startKind says how a store starts, or why it does not yet.
type startKind int

const (
	startBootstrap    startKind = iota // brand-new group, this store creates it
	startJoinNew                       // brand-new group, another member creates it
	startJoinExisting                  // the group has state: catch up before voting
	startWithState                     // the store has state: just start
	// Outcomes of one round that decide nothing yet; decideStart asks again.
	startAskOtherGroups // every member answered empty: the other groups' stores must answer too
	startWait           // a store whose answer could change the decision is silent
	startRefuse         // every member is empty but the group existed: ErrNoStoreWithState
)

// startDecision is the outcome of startInput.decide (and of start, for a
// store with state or an interrupted catch-up).
type startDecision struct {
	kind startKind
	// target, for startJoinExisting, is where the vote gate opens: the
	// last log position of the leader, or else of the most up-to-date
	// member.
	target raftport.Position
	// from names, for startJoinExisting, the member whose answer set
	// target; for startJoinNew, the member that bootstraps the group; for
	// startWait, the member with state whose answer did not suffice.
	from   string
	leader bool // startJoinExisting: from is the group's leader
	// stateSeen: a member with state and a known log position answered,
	// and no leader did (a leader's answer decides at once). It ends a
	// refusal: an operator restored a member.
	stateSeen bool
	silent    []string // startWait: the stores that must still answer
	why       string   // startWait: what the store waits for, for its log
	// err is the refusal (wrapping ErrNoStoreWithState) for startRefuse;
	// for startBootstrap and startJoinNew it is the refusal the operator's
	// accept-loss overrode, if any.
	err error
}

// What an empty store waits for, as its log says it.
const (
	whyNoLeader      = "empty store waiting to rejoin: a member has state but no leader answered; waiting for every member so as not to vote against entries a silent member may hold"
	whyMembersSilent = "empty store waiting for every member of its group to answer before deciding whether to bootstrap"
	whyOthersSilent  = "every member of the group is empty; waiting for every store of the deployment to answer before creating the group"
)

// memberAnswer is what a store said when probed.
type memberAnswer struct {
	name  string
	reply *wire.ProbeReply
	err   error
}

func (a memberAnswer) hasState() bool {
	return a.reply != nil && (a.reply.HasState || a.reply.GroupID != "")
}

func (a memberAnswer) position() raftport.Position {
	return raftport.Position{Term: a.reply.LastTerm, Index: a.reply.LastIndex}
}

// startInput is what an empty store knows when it decides how to start
// (SPEC §4 rule 3): its place in the deployment and what the other stores
// answered. decide is a pure function of it.
type startInput struct {
	self  string   // this store's name
	group int      // its group's index
	order []string // the group's members in the deployment's order
	// preferred are the members on the host the group prefers to be led
	// from (Config.PreferredMembers): the first of them in the
	// deployment's order bootstraps a new group, so that its first leader
	// is already where leader placement would move it; with none, the
	// first member does.
	preferred []string
	// members are the answers of the group's other members.
	members []memberAnswer
	// others are the answers of every store of the other groups; they are
	// asked only once every member answered empty (othersAsked).
	others      []memberAnswer
	othersAsked bool
	// acceptLoss: the operator accepted that the group's messages are lost
	// (umstored recover --accept-loss), so a remembered identity does not
	// stop the group from starting again.
	acceptLoss bool
}

// decide says how an empty store starts, given the answers so far:
//
//   - a member with state is the leader: join with the leader's position
//     as target, whoever else is silent (a leader holds every committed
//     entry);
//   - members with state answered, no leader, and every member answered:
//     join with the most up-to-date position (term first, then index);
//     while some member is silent, wait, since it may hold entries the
//     others lack. A member with state that reports no log position
//     (LastIndex 0) counts as silent: it could hold every acknowledged
//     write;
//   - every member answered empty: ask the other groups' stores. One that
//     remembers this group's identity means the group existed and its data
//     is gone: refuse (unless the operator accepted the loss). While any of
//     them is silent, wait. Otherwise the group is new: its bootstrapper
//     (the first member on its preferred host) creates it, the others wait
//     to be replicated to.
//
// It never decides while a store whose answer could change the decision is
// silent. The answers' order does not matter: they are taken by name.
func (in startInput) decide() startDecision {
	members := byName(in.members)
	var silent []string
	var best *memberAnswer
	for i, a := range members {
		switch {
		case a.err != nil:
			silent = append(silent, a.name)
		case a.hasState() && a.reply.LastIndex == 0:
			// A member with state that cannot say how far its log goes
			// (an older store answering before its raft runs): it could
			// hold every acknowledged write, so it counts as silent.
			silent = append(silent, a.name)
		case a.hasState():
			if a.reply.State == "Leader" {
				return startDecision{kind: startJoinExisting, target: a.position(), from: a.name, leader: true}
			}
			if best == nil || a.position().AtLeast(best.position()) {
				best = &members[i]
			}
		}
	}
	switch {
	case best != nil && len(silent) == 0:
		return startDecision{kind: startJoinExisting, target: best.position(), from: best.name, stateSeen: true}
	case best != nil:
		return startDecision{kind: startWait, from: best.name, silent: silent, why: whyNoLeader, stateSeen: true}
	case len(silent) > 0:
		return startDecision{kind: startWait, silent: silent, why: whyMembersSilent}
	case !in.othersAsked:
		return startDecision{kind: startAskOtherGroups}
	}
	return in.decideNewGroup()
}

// decideNewGroup decides once every member answered empty, from the other
// groups' answers.
func (in startInput) decideNewGroup() startDecision {
	var silent []string
	for _, a := range byName(in.others) {
		if a.err != nil {
			silent = append(silent, a.name)
			continue
		}
		for _, k := range a.reply.KnownGroups {
			if k.Index != in.group || k.GroupID == "" {
				continue
			}
			err := fmt.Errorf("cannot recover group %d: %w: every store of the group is empty, but store %s remembers the group's identity %s; restore a store from a backup, or accept the loss explicitly (see `umstored recover --help`)",
				in.group, ErrNoStoreWithState, a.name, k.GroupID)
			if !in.acceptLoss {
				return startDecision{kind: startRefuse, err: err}
			}
			d := in.newGroup()
			d.err = err
			return d
		}
	}
	if len(silent) > 0 {
		return startDecision{kind: startWait, silent: silent, why: whyOthersSilent}
	}
	return in.newGroup()
}

// newGroup: the bootstrapper creates a brand-new group, the others wait
// to be replicated to.
func (in startInput) newGroup() startDecision {
	if b := in.bootstrapper(); b != in.self {
		return startDecision{kind: startJoinNew, from: b}
	}
	return startDecision{kind: startBootstrap}
}

// bootstrapper is the member that creates a new group: the first member,
// in the deployment's order, on the group's preferred host, or the first
// member when the group has no preference. Every member computes it from
// the same deployment file. (Were two members ever to disagree, both
// would bootstrap with the same configuration, which raft allows; the
// group's identity is still created once, through its log.)
func (in startInput) bootstrapper() string {
	for _, name := range in.order {
		if slices.Contains(in.preferred, name) {
			return name
		}
	}
	return in.order[0]
}

// byName returns the answers sorted by store name.
func byName(answers []memberAnswer) []memberAnswer {
	out := slices.Clone(answers)
	slices.SortStableFunc(out, func(a, b memberAnswer) int { return cmp.Compare(a.name, b.name) })
	return out
}
