package receiver

import (
	"fmt"
	"slices"
	"strings"
)

// Consensus says where a durable receiver resumes when the stores it asks
// recorded different positions for it (UM's
// ume_consensus_sequence_number_behavior for receivers). Positions differ
// because a receiver acknowledges to every group separately, and a store
// or a whole group may have missed the last acknowledgements (it was down,
// cut off, or a follower had not applied them yet). Every recorded
// position is one the receiver reached: it acknowledges only what it
// consumed. So the choice is between redelivering more and trusting fewer
// stores.
type Consensus int

const (
	// Majority (UM's default) takes, in each group, the position a majority
	// of its stores hold: the leader's answer when the group has one (raft
	// commits nothing that a majority does not hold), else the highest
	// position that a majority of the group's stores reached, and ignores a
	// group where fewer than a majority answered; between groups, the
	// latest of the groups' positions, as UM does. It risks redelivering
	// what only a group without a majority recorded, never trusts a lone
	// store.
	Majority Consensus = iota
	// Lowest takes the lowest position any answering store recorded. It
	// redelivers the most: everything some store had not recorded, and
	// everything from the oldest retained message when one store that
	// holds the source has no record of the receiver at all (it lagged
	// since the first acknowledgement, or forgot the receiver after its
	// state lifetime). It never skips a message any store thinks
	// unconsumed.
	Lowest
	// Highest takes the highest position any answering store recorded,
	// even a lone store of a group without a leader. It redelivers the
	// least. Its risk is trusting one store: should that store's position
	// come from another instance that used the same name (two applications
	// sharing a name across a partition, each group having freed the name
	// separately), the receiver skips what it never consumed itself.
	Highest
)

// String is the behaviour's name as UM spells it.
func (c Consensus) String() string {
	switch c {
	case Majority:
		return "majority"
	case Lowest:
		return "lowest"
	case Highest:
		return "highest"
	}
	return fmt.Sprintf("Consensus(%d)", int(c))
}

// ParseConsensus reads lowest, majority or highest.
func ParseConsensus(s string) (Consensus, error) {
	switch strings.ToLower(s) {
	case "majority":
		return Majority, nil
	case "lowest":
		return Lowest, nil
	case "highest":
		return Highest, nil
	}
	return 0, fmt.Errorf("%w: consensus %q: want lowest, majority or highest", ErrConfig, s)
}

// groupAnswers is what one configured group told a registering receiver:
// its leader's answer to the registration, and what each store that
// answered a query holds.
type groupAnswers struct {
	group      int  // 1-based
	stores     int  // configured stores in the group
	registered bool // the leader accepted the registration
	known      bool // the leader's group holds the source
	consumed   uint64
	answers    []storeAnswer
}

// storeAnswer is one store's own record of the receiver.
type storeAnswer struct {
	store    string
	known    bool   // the store holds the source: its answer counts
	consumed uint64 // 0: no position recorded
}

// resumeInput is everything the resume decision looks at.
type resumeInput struct {
	consensus Consensus
	groups    []groupAnswers // one per configured group that said anything, any order
}

// resumeDecision is where the receiver resumes.
type resumeDecision struct {
	consumed uint64   // the position chosen; 0: none recorded anywhere counted
	counted  []string // per group that counted, what it contributed, in group order
	ignored  []string // per group that did not, why
}

// decideResume chooses a durable receiver's position from what the stores
// recorded, under the consensus behaviour. A group counts through its
// leader's registration answer and its stores' answers: stores that do not
// hold the source say nothing, stores that hold it without a record of the
// receiver say 0 (never consumed). The receiver resumes at consumed+1; 0
// means no counted store recorded a position: a new name, which starts at
// the oldest retained message (or where it is told).
//
// It is pure: no clock, no I/O, and no dependence on the order in which
// groups or stores answered.
func decideResume(in resumeInput) resumeDecision {
	groups := slices.Clone(in.groups)
	slices.SortFunc(groups, func(a, b groupAnswers) int { return a.group - b.group })
	var d resumeDecision
	first := true
	take := func(v uint64) {
		switch {
		case first:
			d.consumed = v
		case in.consensus == Lowest:
			d.consumed = min(d.consumed, v)
		default:
			d.consumed = max(d.consumed, v)
		}
		first = false
	}
	for _, g := range groups {
		var values []uint64
		if g.registered && g.known {
			values = append(values, g.consumed)
		}
		for _, a := range g.answers {
			if a.known {
				values = append(values, a.consumed)
			}
		}
		if in.consensus != Majority {
			if len(values) == 0 {
				d.ignored = append(d.ignored, fmt.Sprintf("group %d: no store that holds the source answered", g.group))
				continue
			}
			v := slices.Min(values)
			if in.consensus == Highest {
				v = slices.Max(values)
			}
			take(v)
			d.counted = append(d.counted, fmt.Sprintf("group %d: %d (%s of %d answers)", g.group, v, in.consensus, len(values)))
			continue
		}
		// Majority: the leader's answer, else what a majority of the
		// group's stores reached.
		if g.registered && g.known {
			take(g.consumed)
			d.counted = append(d.counted, fmt.Sprintf("group %d: %d (its leader)", g.group, g.consumed))
			continue
		}
		var held []uint64
		for _, a := range g.answers {
			if a.known {
				held = append(held, a.consumed)
			}
		}
		need := g.stores/2 + 1
		if len(held) < need {
			d.ignored = append(d.ignored, fmt.Sprintf("group %d: no leader, %d of %d stores answered, %d needed", g.group, len(held), g.stores, need))
			continue
		}
		slices.Sort(held)
		v := held[len(held)-need] // the highest position at least need stores reached
		take(v)
		d.counted = append(d.counted, fmt.Sprintf("group %d: %d (%d of %d stores reached it, no leader)", g.group, v, need, g.stores))
	}
	return d
}
