package storegroup

import (
	"fmt"
	"sync"
	"time"

	"umstore/internal/wallclock"
	"umstore/repository"
)

// receiverSessions is the leader's view of which receiver instance (session)
// holds each receiver name of a source, and when it was last heard from: the
// receiver counterpart of sessions (activity.go). It lives in memory on the
// leader; a new leader starts by treating every receiver the log records as
// active as just heard from, so it never expires a live receiver early.
type receiverSessions struct {
	mu        sync.Mutex
	m         map[receiverKey]*receiverSession
	lastCheck time.Time
}

type receiverKey struct{ source, name string }

type receiverSession struct {
	session string
	last    time.Time
	// left: the receiver closed (it said goodbye): the name is free for a
	// new instance at once, but its hold on a paced source lasts until the
	// activity timeout, as for a receiver that crashed, so a receiver
	// restarted within it loses nothing.
	left bool
}

func newReceiverSessions() *receiverSessions {
	return &receiverSessions{m: map[receiverKey]*receiverSession{}}
}

// recordedReceiver is a receiver the log records as active.
type recordedReceiver struct {
	key     receiverKey
	session string
}

// reset forgets everything: on winning leadership, seeded from the
// repository's active receivers.
func (rs *receiverSessions) reset(recorded []recordedReceiver, now time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.m = map[receiverKey]*receiverSession{}
	for _, r := range recorded {
		rs.m[r.key] = &receiverSession{session: r.session, last: now}
	}
	rs.lastCheck = now
}

// errReceiverBusy refuses a registration: another live instance holds the
// name.
type errReceiverBusy struct {
	key     receiverKey
	silent  time.Duration
	timeout time.Duration
}

func (e *errReceiverBusy) Error() string {
	return fmt.Sprintf("receiver name %q of source %q is held by a live receiver (heard from %v ago); it is freed when that receiver closes, or after %v of silence (receiver-activity-timeout)",
		e.key.name, e.key.source, e.silent.Round(time.Millisecond), e.timeout)
}

// claim lets session register under key unless another session holds it
// and was heard from within timeout; a silent holder, or one that left, is
// taken over.
func (rs *receiverSessions) claim(key receiverKey, session string, now time.Time, timeout time.Duration) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if o := rs.m[key]; o != nil && o.session != session && !o.left && now.Sub(o.last) < timeout {
		// The holder's session is not named: it is what lets a client
		// speak for that receiver.
		return &errReceiverBusy{key: key, silent: now.Sub(o.last), timeout: timeout}
	}
	rs.m[key] = &receiverSession{session: session, last: now}
	return nil
}

// holder says who holds key: the session holds it (and is now touched),
// another live one does, or nobody does (never registered with this
// leader, expired, or left).
type holder int

const (
	heldByIt holder = iota
	heldByOther
	heldByNobody
)

// touch records activity of session under key, if it holds it, and says who
// holds it.
func (rs *receiverSessions) touch(key receiverKey, session string, now time.Time) holder {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	o := rs.m[key]
	switch {
	case o == nil:
		return heldByNobody
	case o.session == session && !o.left:
		o.last = now
		return heldByIt
	case o.session == session:
		return heldByNobody // it said goodbye: it must register again
	case o.left:
		return heldByNobody
	}
	return heldByOther
}

// leave frees key for a new instance if session holds it; the activity
// clock keeps running for the expiry.
func (rs *receiverSessions) leave(key receiverKey, session string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if o := rs.m[key]; o != nil && o.session == session {
		o.left = true
	}
}

// lastHeard returns when the holder of key was last heard from.
func (rs *receiverSessions) lastHeard(key receiverKey) (time.Time, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if o := rs.m[key]; o != nil {
		return o.last, true
	}
	return time.Time{}, false
}

// forget drops key, once its expiry is in the log, if session still holds
// it.
func (rs *receiverSessions) forget(key receiverKey, session string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if o := rs.m[key]; o != nil && o.session == session {
		delete(rs.m, key)
	}
}

// silentReceiver is a receiver to expire.
type silentReceiver struct {
	key     receiverKey
	session string
}

// silent returns the receivers silent for longer than timeout. If the
// leader itself was not looking for a while (paused, starved of CPU), it
// could not have heard the receivers either: it gives every receiver a
// fresh start instead of expiring live ones.
func (rs *receiverSessions) silent(now time.Time, timeout time.Duration) []silentReceiver {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	gap := now.Sub(rs.lastCheck)
	rs.lastCheck = now
	if gap > 2*time.Second {
		for _, o := range rs.m {
			o.last = now
		}
		return nil
	}
	var out []silentReceiver
	for k, o := range rs.m {
		if now.Sub(o.last) >= timeout {
			out = append(out, silentReceiver{key: k, session: o.session})
		}
	}
	return out
}

// receiverDuties is what the leader does for receivers besides serving
// them: expire the silent ones (receiver-activity-timeout) and forget the
// state of those silent for their state lifetime
// (receiver-state-lifetime), both through the log.
type receiverDuties struct {
	nextForget time.Time
	// expiredSeen is when this leader first saw each expired receiver
	// (monotonic): a receiver is forgotten only once both its expiry's
	// stamp in the log and this leader's own clock say its lifetime ended,
	// so a wall clock stepped forward forgets nothing early, and a new
	// leader keeps a receiver's state longer, never shorter.
	expiredSeen map[expiredKey]time.Time
}

// expiredKey is one expired registration of a receiver.
type expiredKey struct {
	key     receiverKey
	session string
}

// forgetInterval is how often the leader looks for receivers whose state
// lifetime ended: lifetimes are long, the scan reads every source.
const forgetInterval = 5 * time.Second

// expireSilentReceivers, run by the leader on every tick, expires through
// the log the receivers silent for ReceiverActivityTimeout and, now and
// then, forgets those whose ReceiverStateLifetime ended.
func (s *Store) expireSilentReceivers(now time.Time) {
	for _, r := range s.receivers.silent(now, s.cfg.ReceiverActivityTimeout) {
		cmd := repository.EncodeExpireReceiver(repository.ExpireReceiver{Source: r.key.source, Receiver: r.key.name, Session: r.session, UnixNano: wallclock.Now().UnixNano()})
		if err := s.proposer.Propose(cmd).Error(); err != nil {
			return // not the leader any more; the next one decides
		}
		s.receivers.forget(r.key, r.session)
		s.log.Info("expired a silent receiver: it holds no retention back until it registers again", "source", r.key.source, "receiver", r.key.name,
			"why", "silent for longer than the receiver activity timeout", "timeout", s.cfg.ReceiverActivityTimeout)
	}
	if s.cfg.ReceiverStateLifetime <= 0 || now.Before(s.receiverDuties.nextForget) {
		return
	}
	s.receiverDuties.nextForget = now.Add(forgetInterval)
	// The lifetime counts from when the receiver went silent; the expiry
	// came ReceiverActivityTimeout after that.
	after := max(s.cfg.ReceiverStateLifetime-s.cfg.ReceiverActivityTimeout, 0)
	for _, f := range s.lifetimeEnded(now, after) {
		cmd := repository.EncodeForgetReceiver(repository.ForgetReceiver{Source: f.key.source, Receiver: f.key.name, Session: f.session, UnixNano: wallclock.Now().UnixNano()})
		if err := s.proposer.Propose(cmd).Error(); err != nil {
			return
		}
		s.log.Info("forgot a receiver whose state lifetime ended: its position is gone", "source", f.key.source, "receiver", f.key.name, "lifetime", s.cfg.ReceiverStateLifetime)
	}
}

// lifetimeEnded lists the inactive receivers expired at least after ago,
// by the log's stamp and by this leader's clock since it first saw them.
func (s *Store) lifetimeEnded(now time.Time, after time.Duration) []silentReceiver {
	var out []silentReceiver
	infos, err := s.repo.Sources()
	if err != nil {
		return nil
	}
	seenBefore := s.receiverDuties.expiredSeen
	s.receiverDuties.expiredSeen = map[expiredKey]time.Time{} // only those still expired
	for _, in := range infos {
		rs, err := s.repo.Receivers(in.Name)
		if err != nil {
			continue
		}
		for _, r := range rs {
			if r.Active || r.Session == "" || r.ExpiredUnixNano == 0 {
				continue // active, or never registered: nothing of it expires
			}
			k := expiredKey{receiverKey{in.Name, r.Receiver}, r.Session}
			seen, ok := seenBefore[k]
			if !ok {
				seen = now
			}
			s.receiverDuties.expiredSeen[k] = seen
			if wallclock.Now().Sub(time.Unix(0, r.ExpiredUnixNano)) >= after && now.Sub(seen) >= after {
				out = append(out, silentReceiver(k))
			}
		}
	}
	return out
}

// recordedReceivers reads, from the log, the receivers registered and not
// expired: a new leader's starting view.
func (s *Store) recordedReceivers() []recordedReceiver {
	var out []recordedReceiver
	infos, err := s.repo.Sources()
	if err != nil {
		return nil
	}
	for _, in := range infos {
		rs, err := s.repo.Receivers(in.Name)
		if err != nil {
			continue
		}
		for _, r := range rs {
			if r.Active && r.Session != "" {
				out = append(out, recordedReceiver{key: receiverKey{in.Name, r.Receiver}, session: r.Session})
			}
		}
	}
	return out
}
