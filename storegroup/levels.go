package storegroup

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/wire"
)

// Format levels in a group (repository/level.go has the table).
//
// Every store announces the format level its binary reads in its Pong
// (wire.Pong.FormatLevel), which the leader asks every member for each
// memberCheckInterval (leadership.go). A store of v0.1.0 answers a Pong
// without the field, and counts as level 1. Once every member of the
// group's raft configuration announced at least level L, above the
// group's active level, the leader proposes ActiveLevel{L}; the entry
// goes through the log, so every store applies it at the same index, and
// the repository never lowers it. Every proposal passes the gate
// (repository.Gate, in the proposer): a command type newer than the
// active level is refused before it reaches raft.
//
// What is refused and why (docs/operations.md, "Upgrading"):
//
//   - Unpublished (level 2), the publisher's word for numbers it skipped:
//     withheld (proposal.Proposer.Advise). It is advisory and nobody waits
//     for its answer; until the level is raised the range is reported as a
//     gap, as a level-1 group always did. The leader proposes what it
//     withheld once the level is raised (ProposeWithheld), and the
//     publisher sends the range again on each new connection (to a new
//     leader), so nothing of it is lost.
//   - ForgetSource (level 2), the leader's word that a freed source which
//     never held a message can be dropped: withheld like Unpublished, and
//     proposed once the level is raised (the entry decides from the
//     group's record when it applies, so a late one loses nothing); until
//     then the empty record stays, as a level-1 group keeps it
//     (activity.go).
//   - PublishKeyed (level 2): no proposer writes it yet; every Publish is
//     written in the positional types of level 1, which carry the same
//     request. A future proposer that writes it passes the same gate.

// levelWatch is the leader's view of what holds its group's level back,
// for status.
type levelWatch struct {
	mu     sync.Mutex
	heldBy []string // members announcing a lower level than this binary's, or silent
}

func (w *levelWatch) set(heldBy []string) {
	w.mu.Lock()
	w.heldBy = heldBy
	w.mu.Unlock()
}

func (w *levelWatch) held() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.heldBy)
}

// formatLevel is the level this store announces: its binary's.
func (s *Store) formatLevel() int {
	if s.cfg.emulateLevel > 0 {
		return s.cfg.emulateLevel
	}
	return repository.FormatLevel
}

// activeLevel is the group's active level as this store applied it; 1
// when the repository cannot say (nothing newer is written then).
func (s *Store) activeLevel() int {
	l, err := s.repo.ActiveLevel()
	if err != nil {
		return 1
	}
	return l
}

// gate is the proposer's Gate: repository.Gate at this group's level,
// naming the group in its refusal.
func (s *Store) gate(cmd []byte) error {
	if s.ungated.Load() {
		return nil
	}
	if err := repository.Gate(cmd, s.activeLevel); err != nil {
		return fmt.Errorf("group %d: %w", s.cfg.Group, err)
	}
	return nil
}

// raiseLevel, on the leader, proposes the highest level every member of
// the group's configuration announced in pongs, when it is above the
// active one. A member that did not answer holds the level where it is.
func (s *Store) raiseLevel(pongs map[string]*wire.Pong) {
	r := s.raftNode()
	if r == nil {
		return
	}
	active, target := s.activeLevel(), s.formatLevel()
	names := map[string]bool{}
	for _, m := range s.otherMembers() {
		names[m.Name] = true
	}
	if f := r.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			names[string(srv.ID)] = true
		}
	}
	delete(names, s.cfg.Name)
	var held []string
	silent := false
	for name := range names {
		p, ok := pongs[name]
		if !ok {
			held, silent = append(held, name+": not answering"), true
			continue
		}
		announced := max(int(p.FormatLevel), 1) // a store older than the field reads level 1
		if announced < s.formatLevel() {
			held = append(held, fmt.Sprintf("%s: reads level %d", name, announced))
		}
		target = min(target, announced)
	}
	slices.Sort(held)
	if active >= s.formatLevel() {
		held = nil
	}
	s.levels.set(held)
	if silent || target <= active {
		return
	}
	err := s.proposer.Propose(repository.EncodeActiveLevel(repository.ActiveLevel{Level: uint64(target)})).Error()
	if err != nil && !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) {
		s.log.Warn("could not raise the group's format level; will try again", "level", target, "err", err)
		return
	}
	if err == nil {
		s.log.Info("raised the group's active format level: every member reads it", "from", active, "to", target)
	}
}

// emulatedLevelCheck, for a store emulating an older binary (tests only,
// Config.emulateLevel), does to entries what that binary does: an entry
// of a newer type is skipped when marked ignorable, and stops the store
// otherwise, as the older binary's table lacks its row.
func emulatedLevelCheck(level int, entries []repository.Entry) error {
	if level == 0 {
		return nil
	}
	for i := range entries {
		d := entries[i].Data
		if len(d) == 0 || repository.IntroducedAt(repository.CommandType(d[0])) <= level {
			continue
		}
		if repository.IsIgnorable(d) {
			entries[i].Data = nil
			continue
		}
		return fmt.Errorf("cannot apply raft entry %d: %w %d (a store of level %d): upgrade umstored on this host", entries[i].Index, repository.ErrUnknownCommand, d[0], level)
	}
	return nil
}
