package storegroup

import (
	"fmt"
	"slices"
	"time"
)

// Leader placement: a group prefers to be led from the host holding its
// majority. Losing the other host then never costs the group its leader,
// and the group that does lose its leader (its majority host went) had no
// quorum left anyway, so with intergroup "any" publishing goes on with no
// election in its way. moveInput.decide says, on the leader, whether to hand
// leadership to a member there now; it is pure so that its rules are tested
// from testdata/leadership/move.txt.

// moveInput is what the leader knows when it decides.
type moveInput struct {
	now       time.Time
	self      string   // this store, the leader
	host      string   // the preferred host's name, for messages
	preferred []string // the members on the preferred host; empty: no preference
	// members is what the leader last heard from each other member.
	members map[string]memberState
	// settle: how long a preferred member must have been caught up;
	// minInterval: at least this long between two moves by this leader.
	settle, minInterval time.Duration
	lastMove            time.Time // this leader's last move; zero: none
}

// memberState is one member as the leader last saw it.
type memberState struct {
	// caughtUpSince is when the member was first seen up and caught up
	// in the current unbroken run of such answers; zero when it is not.
	caughtUpSince time.Time
	applied       uint64 // its applied index at the last answer
}

// moveDecision is the leader's decision: move leadership to target, or
// stay ("" target). why says which, for status and logs.
type moveDecision struct {
	target string
	why    string
}

// decide applies the rules, in order:
//
//   - no preferred host, or placement off (settle 0): stay;
//   - the leader runs on the preferred host: stay (leadership never moves
//     away from it this way, so it cannot go back and forth);
//   - this leader moved leadership less than minInterval ago: stay;
//   - a preferred member has been up and caught up for settle: move to
//     the one that has applied the most (the first by name on a tie);
//   - otherwise wait, saying for what.
func (in moveInput) decide() moveDecision {
	switch {
	case len(in.preferred) == 0:
		return moveDecision{why: "no preferred host"}
	case in.settle <= 0:
		return moveDecision{why: "leader placement is off (leadership.settle 0)"}
	case slices.Contains(in.preferred, in.self):
		return moveDecision{why: fmt.Sprintf("led from its preferred host %s", in.host)}
	}
	if !in.lastMove.IsZero() {
		if since := in.now.Sub(in.lastMove); since < in.minInterval {
			return moveDecision{why: fmt.Sprintf("moved leadership %v ago; the next move may come in %v", since.Round(time.Second), (in.minInterval - since).Round(time.Second))}
		}
	}
	best, bestApplied := "", uint64(0)
	longest, longestFor := "", time.Duration(-1)
	for _, name := range slices.Sorted(slices.Values(in.preferred)) {
		st, ok := in.members[name]
		if !ok || st.caughtUpSince.IsZero() {
			continue
		}
		upFor := in.now.Sub(st.caughtUpSince)
		if upFor > longestFor {
			longest, longestFor = name, upFor
		}
		if upFor >= in.settle && (best == "" || st.applied > bestApplied) {
			best, bestApplied = name, st.applied
		}
	}
	switch {
	case best != "":
		return moveDecision{target: best, why: fmt.Sprintf("moving leadership to %s on the preferred host %s (caught up for %v)", best, in.host, in.now.Sub(in.members[best].caughtUpSince).Round(time.Second))}
	case longest != "":
		return moveDecision{why: fmt.Sprintf("waiting to move to the preferred host %s: %s caught up for %v of %v", in.host, longest, longestFor.Round(100*time.Millisecond), in.settle)}
	}
	return moveDecision{why: fmt.Sprintf("waiting to move to the preferred host %s: no store there is up and caught up", in.host)}
}
