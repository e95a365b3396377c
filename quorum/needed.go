package quorum

import "fmt"

// Needed returns how many groups must hold a sequence number for it to be
// stable under b, when configured groups exist and active of them are active
// (connected, answering) now. It is the one statement of the intergroup rule:
// the tracker, registration, the placement planner's failure analysis and
// the operators' status all ask it.
//
// For AllActive only the active groups count, so Needed is active itself,
// and 0 when no group is active: then nothing can become stable.
func (b Behavior) Needed(configured, active int) int {
	switch b {
	case Majority:
		return configured/2 + 1
	case AllActive:
		return active
	case All:
		return configured
	default: // Any
		return 1
	}
}

// Met reports whether holding groups are enough under b. holding counts the
// groups that hold the number (for AllActive: the active ones that hold it),
// out of configured groups of which active are active. With no group
// needed (AllActive, none active) it is false.
func (b Behavior) Met(holding, configured, active int) bool {
	need := b.Needed(configured, active)
	return need > 0 && holding >= need
}

// NeededText says in words what b needs of configured groups, for messages
// and status pages: "at least 1", "2 of 3", "all 2", "every active group".
func (b Behavior) NeededText(configured int) string {
	switch b {
	case Majority:
		return fmt.Sprintf("%d of %d", b.Needed(configured, configured), configured)
	case AllActive:
		return "every active group, at least 1"
	case All:
		return fmt.Sprintf("all %d", configured)
	default:
		return "at least 1"
	}
}
