package publisher

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"umstore/internal/groupclient"
	"umstore/quorum"
	"umstore/wire"
)

// groupReply is what one store group has told the registration so far: its
// answer, or the reason it has not answered that the decision cares about.
type groupReply struct {
	group    int // 0-based
	answered bool
	highSeq  uint64 // the highest sequence number the group holds for the source; 0 if none
	lowSeq   uint64 // the oldest it holds; 0 if none
	groupID  string // the group's identity
	// intragroup is the intragroup behaviour the group applies to this
	// publisher's messages.
	intragroup quorum.Intragroup
	err        error // without an answer: it refused the token (wire.ErrUnauthorized) or the registration (ErrRefused), does not complete it while a store is down (ErrMembersDown), does not apply the intragroup behaviour (ErrIntragroup), the source is busy (ErrSourceBusy), or a store is over a limit (wire CodeUnavailable)
}

// resumeInput is everything the resume decision looks at.
type resumeInput struct {
	source   string
	behavior quorum.Behavior
	groups   int          // configured groups
	replies  []groupReply // at most one per group, in the order the groups first reported
	state    *stateFile   // the publisher's local state file; nil without one
	settled  bool         // the state file was settled (stateFile.Settled) when New read it
	waitOver bool         // RegisterTimeout has passed: enough answers will do
	ended    error        // the caller's context ended (its error); nil while it lasts
}

// resumeDecision is the outcome of decideResume: wait for more answers,
// fail (err), or resume at seq.
type resumeDecision struct {
	wait     bool
	err      error
	seq      uint64     // the first sequence number of the session
	high     uint64     // the highest sequence number an answering group holds
	unused   wire.Range // numbers skipped past the state file's bound, never sent by this session; From 0 if none
	answered []int      // the groups (1-based) that answered, in the order they did
	warnings []warning  // for the operator, in the order found
}

// warning is something the decision found that the operator must hear of.
type warning struct {
	level slog.Level
	msg   string
	attrs []any // slog key/value pairs
}

// decideResume chooses where a registering publisher resumes (SPEC §4 rule
// 2): at one past the highest sequence number that any answering group
// holds for the source, and past the state file's last stable sequence
// number when it is higher. It decides once every group has answered, or,
// after RegisterTimeout (at once with a settled state file), once enough
// groups for the intergroup behaviour have (quorum.Behavior.Met, the answering groups counting as the active
// ones). It fails when a group refused the token and too few answered (no
// retry will change that: every store checks the same token), or when the
// caller's context ended first. Otherwise it says to wait.
//
// It is pure: no clock, no I/O, no dependence on which group answered
// first. register gathers the answers and calls it on each change.
//
// A source held up to wire.MaxSeq (or beyond, by a store from before the
// ceiling) has no sequence number left: the decision fails with
// ErrSequenceExhausted.
func decideResume(in resumeInput) resumeDecision {
	var answered []groupReply
	var refused, busy, down error
	var lost []*groupclient.LeaderlessError // groups that lost their majority
	var downGroups int
	for _, r := range in.replies {
		var ll *groupclient.LeaderlessError
		switch {
		case r.answered:
			answered = append(answered, r)
		case errors.Is(r.err, wire.ErrUnauthorized), errors.Is(r.err, ErrIntragroup), errors.Is(r.err, ErrRefused):
			refused = cmpOr(refused, r.err)
		case errors.As(r.err, &ll) && ll.LostMajority():
			lost = append(lost, ll)
			busy = cmpOr(busy, r.err)
		case errors.Is(r.err, ErrMembersDown):
			// Only this group refuses (a store of it is down): the others
			// may still be enough.
			down = cmpOr(down, r.err)
			downGroups++
		case r.err != nil:
			busy = cmpOr(busy, r.err) // busy, or over a limit: named when the wait ends
		}
	}
	got := len(answered)
	enough := in.behavior.Met(got, in.groups, got)
	var lostWarning *warning
	left := in.groups - downGroups // the groups that may still answer
	switch {
	case got == in.groups:
	case in.settled && in.state != nil && enough:
		// Nothing this publisher sent is above the state file's last
		// stable number: a silent group holds nothing the resume point
		// could reuse.
	case in.waitOver && enough:
	case enough && got+len(lost) == in.groups:
		// Every group that did not answer has had no leader for longer
		// than an election takes: it lost its majority (a host down or
		// paused) and answers nothing until that host is back, so the
		// rest of RegisterTimeout would buy nothing. It may hold numbers
		// of this source; so may a group that stays away past
		// RegisterTimeout: the state file's bound (below) covers both.
		lostWarning = lostMajorityWarning(lost)
	case refused != nil && !enough:
		return resumeDecision{err: fmt.Errorf("%w for source %q: %w", ErrRegistration, in.source, refused)}
	case down != nil && !enough && !in.behavior.Met(left, in.groups, left):
		return resumeDecision{err: fmt.Errorf("%w for source %q: intergroup %s needs %s groups: %w",
			ErrRegistration, in.source, in.behavior, in.behavior.NeededText(in.groups), down)}
	case in.ended != nil:
		cause := in.ended
		if busy != nil {
			cause = busy
		} else if down != nil {
			cause = down
		}
		return resumeDecision{err: fmt.Errorf("%w: %d of %d groups answered for source %q, %s needed for intergroup %s: %w",
			ErrRegistration, got, in.groups, in.source, in.behavior.NeededText(in.groups), in.behavior, cause)}
	default:
		return resumeDecision{wait: true}
	}

	var d resumeDecision
	if lostWarning != nil {
		d.warnings = append(d.warnings, *lostWarning)
	}
	for _, r := range answered {
		d.high = max(d.high, r.highSeq)
		d.answered = append(d.answered, r.group+1)
		if in.state == nil {
			continue
		}
		if known := in.state.Groups[r.group+1]; known != "" && r.groupID != "" && known != r.groupID && wire.RestoredFrom(r.groupID) == wire.OwnGroupID(known) {
			d.warnings = append(d.warnings, warning{slog.LevelError,
				"a store group was restored from a backup since this publisher last ran: what this publisher sent after the backup was taken is not in it",
				[]any{"group", r.group + 1, "was", known, "now", r.groupID}})
		} else if known != "" && r.groupID != "" && known != r.groupID {
			d.warnings = append(d.warnings, warning{slog.LevelError,
				"a store group has a new identity since this publisher last ran: it was re-created and its history is gone",
				[]any{"group", r.group + 1, "was", known, "now", r.groupID}})
		}
	}
	last := d.high
	if in.state != nil && in.state.LastStable > d.high {
		d.warnings = append(d.warnings, warning{slog.LevelWarn,
			"the state file remembers a higher stable sequence number than any group that answered holds: resuming past it",
			[]any{"state_file_seq", in.state.LastStable, "groups_high_seq", d.high}})
		last = in.state.LastStable
	}
	if in.state != nil && !in.settled && got < in.groups && in.state.SentUpTo > last {
		// A group that did not answer may hold what an earlier incarnation
		// sent after its last stable number: never give those numbers a
		// second payload (reserve.go).
		d.warnings = append(d.warnings, warning{slog.LevelWarn,
			"a group that did not answer may hold messages an earlier incarnation sent up to the state file's bound: resuming past it; the numbers skipped are declared never published once every group has said what it holds",
			[]any{"sent_up_to", in.state.SentUpTo, "resume_after", last, "groups_answered", d.answered}})
		d.unused = wire.Range{From: last + 1, To: in.state.SentUpTo} // declared never published (unused.go)
		last = in.state.SentUpTo
	}
	if last >= wire.MaxSeq {
		// Nothing is left to send: fail now rather than at the first Send.
		return resumeDecision{err: fmt.Errorf("%w: source %q is held up to sequence number %d, and %d is the highest a source may have; publish under a new source name",
			ErrSequenceExhausted, in.source, last, uint64(wire.MaxSeq))}
	}
	d.seq = last + 1
	return d
}

// lostMajorityWarning tells the operator why the registration did not wait
// for some groups.
func lostMajorityWarning(lost []*groupclient.LeaderlessError) *warning {
	groups := make([]int, len(lost))
	longest := time.Duration(0)
	for i, l := range lost {
		groups[i] = l.Group
		longest = max(longest, l.For)
	}
	slices.Sort(groups)
	return &warning{slog.LevelInfo,
		"resuming without the groups that have no leader: their stores that answered have heard from none for longer than an election takes (a host down or paused); they are registered with once they answer",
		[]any{"groups", groups, "no_leader_for", longest.Round(100 * time.Millisecond)}}
}

// cmpOr returns a unless it is nil, else b: the first of the errors found.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
