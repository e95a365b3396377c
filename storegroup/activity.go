package storegroup

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"umstore/internal/wallclock"
	"umstore/repository"
)

// sessions is the leader's view of which publisher session holds each
// source and when it was last heard from (seed 002: a client that dies
// without saying goodbye has its session expired by a survivor). It lives
// in memory on the leader; a new leader starts by treating every recorded
// owner as just heard from, so it never frees a source early.
type sessions struct {
	mu        sync.Mutex
	owner     map[string]*sessionState
	lastCheck time.Time // when the leader last looked for silent owners
}

type sessionState struct {
	session string
	last    time.Time
}

// errSessionLimit refuses a claim while the leader holds its limit of
// sources (ClientLimits.MaxSessions).
var errSessionLimit = errors.New("the leader holds its limit of publisher sessions")

func newSessions() *sessions { return &sessions{owner: map[string]*sessionState{}} }

// reset forgets everything: on winning leadership, seeded from the
// repository's recorded owners.
func (ss *sessions) reset(recorded map[string]string, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.owner = map[string]*sessionState{}
	for src, session := range recorded {
		if session != "" {
			ss.owner[src] = &sessionState{session: session, last: now}
		}
	}
}

// touch records activity of session on source, if it holds it.
func (ss *sessions) touch(source, session string, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if o := ss.owner[source]; o != nil && o.session == session {
		o.last = now
	}
}

// claim lets session register on source unless another session holds it
// and was heard from within timeout. If it takes over from a session that
// went silent, or from an earlier incarnation of the same publisher
// (sessionIncarnation: same identity, lower epoch), it returns that
// session, which the caller expires through the log first: the log then
// refuses the old incarnation's later writes. A later incarnation holding
// the source refuses an earlier one with errFenced; an epoch further ahead
// of now than maxEpochAhead is refused with errEpochAhead (incarnation.go).
// A source not held yet is refused with errSessionLimit while limit (when
// above 0) sources are held.
func (ss *sessions) claim(source, session string, now time.Time, timeout time.Duration, limit int) (expired string, err error) {
	if err := checkEpoch(session, now); err != nil {
		return "", err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	o := ss.owner[source]
	if o == nil && limit > 0 && len(ss.owner) >= limit {
		return "", errSessionLimit
	}
	if o != nil && o.session != session {
		live := now.Sub(o.last) < timeout
		switch newer, same := newerIncarnation(session, o.session); {
		case same && newer:
			// A restarted publisher takes its own source over at once.
		case same && live:
			return "", fmt.Errorf("%w: a later incarnation of this publisher holds source %q; this one must stop", errFenced, source)
		case live:
			// The holder's session is not named: it is what lets a
			// connection speak for that publisher.
			return "", fmt.Errorf("source %q is held by a live publisher (heard from %v ago); it is freed after %v of silence, or when that publisher closes", source, now.Sub(o.last).Round(time.Millisecond), timeout)
		}
		expired = o.session
	}
	ss.owner[source] = &sessionState{session: session, last: now}
	return expired, nil
}

// leave frees source if session holds it, and reports whether it did.
func (ss *sessions) leave(source, session string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if o := ss.owner[source]; o != nil && o.session == session {
		delete(ss.owner, source)
		return true
	}
	return false
}

// silent returns the sources whose owner has been silent longer than timeout.
// If the leader itself was not looking for a while (paused, frozen, starved
// of CPU), it could not have heard the publishers' keep-alives either: it
// gives every owner a fresh start instead of expiring live publishers.
func (ss *sessions) silent(now time.Time, timeout time.Duration) map[string]string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := map[string]string{}
	gap := now.Sub(ss.lastCheck)
	ss.lastCheck = now
	if gap > 2*time.Second {
		for _, o := range ss.owner {
			o.last = now
		}
		return out
	}
	for src, o := range ss.owner {
		if now.Sub(o.last) >= timeout {
			out[src] = o.session
		}
	}
	return out
}

// expireSilent, run by the leader, frees through the log every source
// whose publisher has been silent for SourceActivityTimeout.
func (s *Store) expireSilent(now time.Time) {
	for src, session := range s.sessions.silent(now, s.cfg.SourceActivityTimeout) {
		s.proposeExpiry(src, session, "silent for longer than the source activity timeout")
	}
}

// proposeExpiry frees a source through the log, so every store agrees a
// new publisher may take it over.
func (s *Store) proposeExpiry(source, session, why string) {
	cmd := repository.EncodeExpireSession(repository.ExpireSession{Source: source, Session: session, UnixNano: wallclock.Now().UnixNano()})
	if err := s.proposer.Propose(cmd).Error(); err != nil {
		return // not the leader any more; the next leader decides
	}
	s.sessions.leave(source, session)
	s.log.Info("freed a source for a new publisher", "source", source, "session", session, "why", why)
	s.forgetIfEmpty(source, session)
}

// forgetIfEmpty asks the group to forget a source just freed that never
// held a message (repository.ForgetSource): a client that registers names
// and leaves must not make every store keep them for good. The entry
// decides from the group's own record; this look only spares the log an
// entry that would be refused. Below the format level that adds it (a
// store of the group runs an older binary, or a new group's leader has not
// raised its level yet) it is not written but withheld (proposal.Advise),
// and proposed once the level is raised; the record stays until then, as
// it did before, and for good if the group stays below the level.
func (s *Store) forgetIfEmpty(source, session string) {
	in, ok, err := s.repo.Source(source)
	if err != nil || !ok || in.HighSeq != 0 || in.TrimmedThrough != 0 {
		return
	}
	cmd := repository.EncodeForgetSource(repository.ForgetSource{Source: source, Session: session})
	if err := s.proposer.Propose(cmd).Error(); err != nil {
		if errors.Is(err, repository.ErrLevelNotActive) {
			s.proposer.Advise(cmd) // levels.go: once the level is raised
		}
		s.log.Debug("an empty source was not forgotten", "source", source, "err", err)
		return
	}
	if _, still, err := s.repo.Source(source); err == nil && !still {
		s.metrics.forgotten.Add(1)
		s.log.Debug("forgot a source that never held a message", "source", source)
	}
}

// recordedOwners reads which session holds each source, from the log.
func (s *Store) recordedOwners() map[string]string {
	out := map[string]string{}
	infos, err := s.repo.Sources()
	if err != nil {
		return out
	}
	for _, in := range infos {
		if in.Session != "" {
			out[in.Name] = in.Session
		}
	}
	return out
}
