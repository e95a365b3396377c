package groupclient

import (
	"fmt"
	"time"

	"umstore/wire"
)

// LostMajorityAfter is how long a group's stores must have known no
// leader before a client takes the group to have lost its majority (a
// host down or paused), not to be electing: an election here takes about
// a second (a 500 ms election timeout, and a second round now and then).
// A group past it answers nothing until the missing stores are back, so
// waiting for it buys nothing.
const LostMajorityAfter = 2 * time.Second

// lostMajorityProbe is how long, once a store said its group lost its
// majority, the group's other stores have to answer before a search gives
// up: a live leader answers in well under a millisecond, and a store cut
// off from the one that answered may still lead the others (a partition,
// not a lost majority).
const lostMajorityProbe = 300 * time.Millisecond

// LeaderlessError says that a group's stores that answered named no
// leader, and had heard from none for at least For (the longest a store
// said, wire.NotLeader.NoLeaderMS); the group's other stores did not
// answer at all. errors.As finds it in the error of a Call or an Open
// that found no leader.
type LeaderlessError struct {
	Group    int
	For      time.Duration // the longest any store of the group said it had known no leader
	Answered int           // stores that answered "no leader"
}

func (e *LeaderlessError) Error() string {
	return fmt.Sprintf("group %d has no leader: %d of its stores said they had heard from none for %v, the others did not answer (a host down or paused?)",
		e.Group, e.Answered, e.For.Round(100*time.Millisecond))
}

// LostMajority reports whether the group has been without a leader for
// longer than an election takes (LostMajorityAfter).
func (e *LeaderlessError) LostMajority() bool { return e.For >= LostMajorityAfter }

// leaderless gathers, over one search for the leader, what the stores
// said of having no leader.
type leaderless struct {
	group    int
	longest  time.Duration
	answered map[string]bool // the stores that answered "no leader"
	named    bool            // a store named a leader: the group has one
}

// saw records store from's NotLeader answer.
func (l *leaderless) saw(from string, m *wire.NotLeader) {
	if m.Leader != "" {
		l.named = true
		return
	}
	if l.answered == nil {
		l.answered = map[string]bool{}
	}
	l.answered[from] = true
	l.longest = max(l.longest, time.Duration(m.NoLeaderMS)*time.Millisecond)
}

// err returns the LeaderlessError of the search, nil unless every store
// that answered said it had known no leader for a while.
func (l *leaderless) err() *LeaderlessError {
	if l.named || len(l.answered) == 0 || l.longest == 0 {
		return nil
	}
	return &LeaderlessError{Group: l.group, For: l.longest, Answered: len(l.answered)}
}

// lostMajority reports whether the search has seen enough to stop: a
// store said the group has had no leader for longer than an election
// takes, and none named one.
func (l *leaderless) lostMajority() bool {
	e := l.err()
	return e != nil && e.LostMajority()
}
