package deploystatus

// The states a store can be in; the package documentation says when each
// applies. They are the strings of the "state" fields of [Store] and
// [SummaryStore], which the status page and scripts match on.
const (
	StateFailed     = "failed"
	StateRefused    = "refused"
	StateLeader     = "leader"
	StateCatchingUp = "catching-up"
	StateWaiting    = "waiting"
	StateEmpty      = "empty"
	StateStarting   = "starting"
	StateStopped    = "stopped"
	StateCandidate  = "candidate"
	StateUp         = "up"
	StateDown       = "down"
)

// catchingUpLag is how many entries behind its leader's applied index a
// follower may be before it counts as catching up.
const catchingUpLag = 1000

// runningStates are the states of a store that takes part in raft.
var runningStates = []string{StateLeader, StateUp, StateCandidate, StateCatchingUp}

// classify turns what a store says about itself into its state. raftState
// is the store's own word (storegroup.Status.State or wire.ProbeReply.State):
// Leader, Follower, Candidate, Shutdown, starting, failed or refused. The
// order is the one documented in the package comment: a failed store may
// have had state, a leader never catches up, an empty store waiting for its
// turn is waiting.
func classify(raftState string, hasState, catchingUp, waiting bool) string {
	switch {
	case raftState == "failed":
		return StateFailed
	case raftState == "refused":
		return StateRefused
	case raftState == "Leader":
		return StateLeader
	case catchingUp:
		return StateCatchingUp
	case waiting:
		return StateWaiting
	case !hasState:
		return StateEmpty
	case raftState == "starting":
		return StateStarting
	case raftState == "Shutdown":
		return StateStopped
	case raftState == "Candidate":
		return StateCandidate
	}
	return StateUp
}
