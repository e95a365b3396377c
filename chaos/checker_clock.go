package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// checkSessions is the session rule: no leader frees the source of a
// publisher that is still running for silence. It holds in every
// schedule, not only around clock-jumps.
//
// A leader frees a source for silence ("freed a source for a new
// publisher") once it has heard nothing of the session that holds it for
// source-activity-timeout (30 s) on its monotonic clock: by itself (why
// whySilent), or when another publisher registers the source and finds
// the holder silent (whyTakenSilent; the paced registration path gives
// that why to a restarted publisher's takeover as well, which is harmless
// here: the harness ends an incarnation before it starts the next). The
// other whys are a newer incarnation's takeover and a goodbye, which a
// running publisher may well see (a goodbye comes before it exits). Each
// expiry names the session, and each publisher incarnation reported the
// session it registered with, so the rule judges the one incarnation
// whose session was freed: an expiry of a session of an incarnation that
// had ended (killed, or finished) is what the timeout is for; one of a
// session no incarnation reported (killed before it could say) is not
// judged. A kill ends the incarnation before kill9 returns, so a
// kill-publisher window excuses nothing more: the killed incarnation is
// judged ended, and its successor registers after the window and is
// silent for 30 s at the earliest after that.
//
// Could a live publisher fall silent for 30 s in an otherwise fine
// schedule? Its keep-alives go to each group on a stream of their own
// (every 3 s when it has nothing to send, and a held-back publisher is
// counted as heard from), on loopback, which no fault cuts: a partition
// cuts the hosts from each other, not the publishers from them. What is
// left is a leader that cannot hear it: one frozen or starved (the leader
// then sees a gap of more than 2 s in its own checks and counts every
// owner as just heard from, sessions.silent), one that lost its quorum
// (it cannot commit the expiry, and the line is logged only once it is
// committed) and a new leader (which counts every owner as just heard
// from when it wins). With --long-outages a group is without a quorum for
// up to 45 s, past the timeout, but that is the second case, and the
// leader that follows is the third. So a silence expiry of a running
// incarnation means the leader counted its silence on a clock that is not
// what its name says: the wall clock, which a clock-jump steps. The
// detail names the steps made shortly before, when there were any.
func checkSessions(h *History, add addFunc) {
	type incKey struct {
		source string
		inc    int
	}
	owner := map[string]Registration{} // source + session -> incarnation
	for _, r := range h.Registrations {
		if r.Session != "" {
			owner[r.Source+"\x00"+r.Session] = r
		}
	}
	ended := map[incKey]time.Time{}
	for _, e := range h.Ends {
		k := incKey{e.Source, e.Incarnation}
		if t, ok := ended[k]; !ok || e.At.Before(t) {
			ended[k] = e.At
		}
	}
	for _, e := range h.Expiries {
		if e.Why != whySilent && e.Why != whyTakenSilent {
			continue
		}
		r, ok := owner[e.Source+"\x00"+e.Session]
		if !ok {
			continue
		}
		end, gone := ended[incKey{r.Source, r.Incarnation}]
		if gone && !end.After(e.At) {
			continue
		}
		until := "still running at the end"
		if gone {
			until = "running until " + end.Format("15:04:05.000")
		}
		add("session", "store %s (%s) freed source %s at %s for silence (%q), but session %s was publisher incarnation %d's, registered at %s and %s%s",
			e.Store, h.hostWhere(e.Host, e.At), e.Source, e.At.Format("15:04:05.000"), e.Why, e.Session, r.Incarnation, r.At.Format("15:04:05.000"), until, stepsBefore(h, e.At))
	}
}

// stepsLookBack is how far before an expiry the session rule looks for
// clock steps to name: the activity timeout and some.
const stepsLookBack = time.Minute

// stepsBefore names the clock steps made in the minute before t, for a
// violation's detail ("" when there were none).
func stepsBefore(h *History, t time.Time) string {
	var parts []string
	for _, s := range h.ClockSteps {
		if !s.At.After(t) && t.Sub(s.At) <= stepsLookBack {
			parts = append(parts, fmt.Sprintf("host %s's clock to %s at %s", s.Host, signed(s.Offset), s.At.Format("15:04:05.000")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; clock steps before it: " + strings.Join(parts, ", ")
}

// lockResolution is how finely a daemon's log stamps its lines (slog's
// text handler writes milliseconds): a lock logged within it of the
// previous holder's end is not judged to come before that end.
const lockResolution = time.Millisecond

// checkLocks is the lock rule: a store's data directory is never locked
// by a process while the process that locked it before is still running,
// whatever the lock mode: with flock the kernel sees to it, with a lease
// the lease does (a holder renews on its own boot clock; a successor
// judges its age on the storage's clock), and no clock-jump may change
// that. Every lock a daemon logged ("data directory locked", "data
// directory lease acquired", "took over the data directory lease") is
// compared with every earlier lock of that store by another process (host
// daemon incarnation): that process must have been seen gone before it.
// The harness starts a host's next daemon only once the last one is gone,
// so this fails only if a lock was taken by a process the harness did not
// account for; with a standby (not run) it would test the lock itself.
func checkLocks(h *History, add addFunc) {
	type proc struct {
		host string
		inc  int
	}
	runs := map[proc]HostRun{}
	for _, r := range h.HostRuns {
		runs[proc{r.Host, r.Incarnation}] = r
	}
	byStore := map[string][]LockTaken{}
	for _, l := range h.Locks {
		byStore[l.Store] = append(byStore[l.Store], l)
	}
	for _, store := range sortedSources(byStore) {
		locks := slices.Clone(byStore[store])
		slices.SortStableFunc(locks, func(a, b LockTaken) int { return a.At.Compare(b.At) })
		for i, b := range locks {
			for _, a := range locks[:i] {
				if a.Host == b.Host && a.Incarnation == b.Incarnation {
					continue
				}
				run, ok := runs[proc{a.Host, a.Incarnation}]
				if !ok {
					continue // a process the history knows nothing of: nothing to judge it by
				}
				if !run.Ended.IsZero() && run.Ended.Before(b.At.Add(lockResolution)) {
					continue
				}
				until := "was never seen to end"
				if !run.Ended.IsZero() {
					until = "ended only at " + run.Ended.Format("15:04:05.000")
				}
				add("lock", "store %s's data directory was locked (%s, holder %s) by host %s's daemon incarnation %d at %s while incarnation %d of host %s, which had locked it (holder %s) at %s, was still running: it %s%s",
					store, b.Mode, b.Holder, b.Host, b.Incarnation, b.At.Format("15:04:05.000"), a.Incarnation, a.Host, a.Holder, a.At.Format("15:04:05.000"), until, stepsBefore(h, b.At))
			}
		}
	}
}

// checkLifetimes is the lifetime rule: nothing is released for age and no
// receiver's state is forgotten before the daemons' limits (Lifetimes,
// longer than a schedule lives) could have been reached. The stores
// measure both on their monotonic clocks (retention samples when it saw
// each sequence number; a receiver is forgotten only once both the
// expiry's stamp in the log and the leader's own time since it saw the
// expiry say so), so a clock-jump forward, which makes every stamp look
// hours old, must change neither.
func checkLifetimes(h *History, add addFunc) {
	l := h.Lifetimes
	if l == nil {
		return
	}
	if l.RetentionMaxAge > 0 {
		for _, src := range sortedSources(h.RetentionLog.Releases) {
			if n := h.RetentionLog.Releases[src]["age"]; n > 0 {
				add("lifetime", "source %s: the leaders released messages for age %d times, but no message of this schedule was near the age limit (%v)%s", src, n, l.RetentionMaxAge, stepsNote(h))
			}
		}
	}
	if l.ReceiverStateLifetime <= 0 {
		return
	}
	for _, f := range h.Forgotten {
		add("lifetime", "store %s (%s) forgot receiver %s of source %s at %s, but no receiver of this schedule was silent for its state lifetime (%v)%s",
			f.Store, h.hostWhere(f.Host, f.At), f.Receiver, f.Source, f.At.Format("15:04:05.000"), l.ReceiverStateLifetime, stepsBefore(h, f.At))
	}
}

// stepsNote says how many clock steps the schedule made, for a violation
// that has no time of its own.
func stepsNote(h *History) string {
	if len(h.ClockSteps) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the schedule stepped the daemons' clocks %d times)", len(h.ClockSteps))
}
