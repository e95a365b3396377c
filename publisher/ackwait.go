package publisher

import "time"

// How long a group may stay silent. A leader that is paused or cut off
// keeps its TCP connection open and answers nothing: the publisher notices
// only by the silence, so the bound (Config.AckTimeout) is short, about an
// election, by when the group has a new leader. But a store answers a
// connection's requests in order: a Ping sent behind a proposal that takes
// long to commit (a payload of megabytes on a slow disk) is answered only
// after it, and each reconnection sends the unconfirmed messages again,
// adding to the load that made the group slow. So a group that stalled and
// then answered again from the same leader was slow, not gone: its bound
// doubles, up to maxAckBackoff times AckTimeout, and returns to AckTimeout
// once a connection has run ackRecoverAfter without stalling.
const (
	maxAckBackoff   = 16
	ackRecoverAfter = time.Minute
)

// ackWait is one group's silence bound. It is used by the group's own
// goroutine only.
type ackWait struct {
	base    time.Duration // Config.AckTimeout
	current time.Duration
	// stalledAt is the leader whose silence ended the last connection,
	// until the next registration says who leads.
	stalledAt string
}

// startGrown is how many times AckTimeout a group's bound starts at: 1,
// except in tests of a leader that was slow before.
var startGrown time.Duration = 1

func newAckWait(base time.Duration) ackWait {
	return ackWait{base: base, current: startGrown * base}
}

// stalled records that the leader at addr left the connection silent for
// the bound.
func (a *ackWait) stalled(addr string) { a.stalledAt = addr }

// registered records who leads after a reconnection, and reports whether
// the bound grew: the leader that stalled answered again.
func (a *ackWait) registered(addr string) bool {
	same := a.stalledAt != "" && a.stalledAt == addr
	a.stalledAt = ""
	if !same || a.current >= maxAckBackoff*a.base {
		return false
	}
	a.current = min(2*a.current, maxAckBackoff*a.base)
	return true
}

// healthy records that a connection has run for d without stalling; after
// ackRecoverAfter the bound is back at its base.
func (a *ackWait) healthy(d time.Duration) {
	if d >= ackRecoverAfter {
		a.current = a.base
	}
}

// leaderGone records that another member leads while the silent one was
// waited for: the grown bound was for that leader, so it returns to base.
func (a *ackWait) leaderGone() {
	a.current, a.stalledAt = a.base, ""
}

// reprobeEvery is how often a grown bound's silence, quiet so far, is put
// to the other members again (groupclient.LeaderElsewhere): every quarter
// of the base bound while the silence is young, since an election after a
// real loss ends within about two base bounds of it and a probe that came
// a moment too early must not leave the publisher waiting a whole base
// bound more (the chaos suite's pause-host: 2.9 s where the election took
// 1.3 s); every base bound after that, since a slow leader may stay
// silent for long and each probe is a connection to each other member.
func reprobeEvery(quiet, base time.Duration) time.Duration {
	if quiet < 3*base {
		return base / 4
	}
	return base
}
