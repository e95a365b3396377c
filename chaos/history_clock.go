package main

import (
	"fmt"
	"time"
)

// LifetimeLimits are the age limit of retention and the lifetime of a
// silent receiver's state that every daemon of a schedule runs with
// (--retention-max-age, --receiver-state-lifetime): far longer than a
// schedule lives, so that no message is old enough to be released for age
// and no receiver silent long enough to be forgotten, unless the stores
// judged an age or a lifetime on a wall clock that a clock-jump stepped
// forward (checkLifetimes). Without the limits (umstored's defaults have
// none) a step could not reach either.
type LifetimeLimits struct {
	RetentionMaxAge       time.Duration `json:"retention_max_age"`
	ReceiverStateLifetime time.Duration `json:"receiver_state_lifetime"`
}

// lifetimeLimits are a run's limits: an hour, or twice the longest a
// schedule may run (its bound and the final phase's) if that is longer.
// Most clock-jumps step further than that (5 minutes to 3 hours).
func lifetimeLimits(opts options) *LifetimeLimits {
	d := max(time.Hour, 2*(opts.ScheduleTimeout+finalPhase))
	return &LifetimeLimits{RetentionMaxAge: d, ReceiverStateLifetime: d}
}

// args are the `umstored run` flags of the limits.
func (l *LifetimeLimits) args() []string {
	if l == nil {
		return nil
	}
	return []string{"--retention-max-age", l.RetentionMaxAge.String(), "--receiver-state-lifetime", l.ReceiverStateLifetime.String()}
}

func (l *LifetimeLimits) String() string {
	if l == nil {
		return "none"
	}
	return fmt.Sprintf("retention max age %v, receiver state lifetime %v", l.RetentionMaxAge, l.ReceiverStateLifetime)
}

// ReceiverForgotten is a leader forgetting a silent receiver's state, as
// its daemon logged it ("forgot a receiver whose state lifetime ended").
type ReceiverForgotten struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	Store       string    `json:"store"`
	Source      string    `json:"source"`
	Receiver    string    `json:"receiver"`
	At          time.Time `json:"at"`
}

// ClockStep is one step of a host daemon's wall clock that clock-jump
// made through its /debug/clock: when the daemon answered, the offset it
// set and the one it replaced (the daemon's own answer, not the request).
type ClockStep struct {
	Host        string        `json:"host"`
	Incarnation int           `json:"incarnation"`
	At          time.Time     `json:"at"`
	Offset      time.Duration `json:"offset"`
	Previous    time.Duration `json:"previous"`
}

// SessionExpiry is a leader freeing a publisher's source, as its daemon
// logged it ("freed a source for a new publisher"): the session it freed
// and why (silence, or a takeover by a newer incarnation or another
// publisher).
type SessionExpiry struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	Store       string    `json:"store"`
	Source      string    `json:"source"`
	Session     string    `json:"session"`
	Why         string    `json:"why"`
	At          time.Time `json:"at"`
}

// LockTaken is a store locking its data directory, as its daemon logged
// it: a flock taken ("data directory locked"), a lease acquired or taken
// over ("data directory lease acquired", "took over the data directory
// lease"). Holder is the lock's holder id; Previous, for a takeover, who
// held the lease before.
type LockTaken struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	Store       string    `json:"store"`
	Mode        string    `json:"mode"`
	Holder      string    `json:"holder"`
	Previous    string    `json:"previous,omitempty"`
	At          time.Time `json:"at"`
}

// ClockStepped records one step of a host's wall clock.
func (h *History) ClockStepped(s ClockStep) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ClockSteps = append(h.ClockSteps, s)
}

// AddSessionLog records what one host's log said about freed sources,
// forgotten receivers and locked data directories.
func (h *History) AddSessionLog(l hostLog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Expiries = append(h.Expiries, l.Expiries...)
	h.Forgotten = append(h.Forgotten, l.Forgotten...)
	h.Locks = append(h.Locks, l.Locks...)
}
