package storegroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"umstore/storegroup/raftport"

	"github.com/hashicorp/raft"
)

// start decides how the store starts and starts raft: an interrupted
// catch-up resumes behind its vote gate, a store with state just starts,
// and an empty store asks its group (decideStart, bootstrap.go). A store
// that joins an existing group waits for its turn (admission) and catches
// up before it votes freely.
func (s *Store) start() {
	s.startMemberDuties() // members_duties.go: where the members listen now
	marker, err := readRejoin(s.cfg.DataDir)
	if err != nil {
		s.fail(err)
		return
	}
	hasState, err := s.hasLocalState()
	if err != nil {
		s.fail(fmt.Errorf("read local raft state: %w", err))
		return
	}
	var d startDecision
	switch {
	case marker != nil:
		// A partial log is as unsafe to vote with as an empty one.
		d = startDecision{kind: startJoinExisting, target: marker.Target, from: marker.From}
		s.log.Warn("resuming an interrupted catch-up: voting only for candidates whose log reaches the target", "target", d.target.String())
	case hasState:
		d = startDecision{kind: startWithState}
	default:
		d, err = s.decideStart(s.ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.fail(err)
			}
			return
		}
		if d.kind == startJoinExisting {
			if err := writeRejoin(s.cfg.DataDir, rejoinMarker{Target: d.target, From: d.from}); err != nil {
				s.fail(fmt.Errorf("record the rejoin target: %w", err))
				return
			}
		}
	}
	release := func() {}
	// The turn is given back however this goroutine ends, unless catchUp
	// takes it over: also when a fault in raft.db ends it inside raft
	// (raftLogStore).
	defer func() { release() }()
	if d.kind == startJoinExisting {
		release, err = s.awaitTurn()
		if err != nil {
			release = func() {}
			return // stopping
		}
		s.port.Gate().Close(d.target)
		s.log.Info("joining the group empty: catching up before voting", "target", d.target.String(), "from", d.from)
	}
	if err := s.startRaft(d.kind == startBootstrap); err != nil {
		s.fail(err)
		return
	}
	if err := os.Remove(filepath.Join(s.cfg.DataDir, acceptLossFile)); err == nil {
		s.log.Warn("the accepted loss is done: the group started again; its old messages are gone")
	}
	s.bg.Add(4)
	go func() { defer s.bg.Done(); s.watchLeadership() }()
	go func() { defer s.bg.Done(); s.repair.run(s.ctx) }()
	go func() { defer s.bg.Done(); s.retain.run(s.ctx) }()
	go func() { defer s.bg.Done(); s.compactLog(s.ctx) }()
	if d.kind == startJoinExisting {
		turn := release
		release = func() {}
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.catchUp(d.target, turn) }()
	}
}

// awaitTurn waits until the host's admission lets this empty store join
// its group (one empty store per group catches up at a time, SPEC §4 rule
// 4). It returns the turn's release, or an error when the store stops.
func (s *Store) awaitTurn() (release func(), err error) {
	adm := s.cfg.Admission
	if adm == nil {
		adm = unlimited{}
	}
	if hr, ok := adm.(holderReporter); ok {
		if holder := hr.CatchingUp()[s.cfg.Group]; holder != "" {
			s.log.Info("empty store waits for its turn to join its group: another empty store of the group is still catching up", "waits_for", holder)
		}
	}
	s.waitingToJoin.Store(true)
	defer s.waitingToJoin.Store(false)
	return adm.Acquire(s.ctx, s.cfg.Group, s.cfg.Name)
}

// catchUp waits until raft has applied the target entry, then opens the
// vote gate, removes the rejoin marker and lets the next empty store of
// the group start.
func (s *Store) catchUp(target raftport.Position, release func()) {
	defer release()
	r := s.raftNode()
	start := time.Now()
	lastReport := start
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		applied := r.AppliedIndex()
		if applied >= target.Index {
			if err := removeRejoin(s.cfg.DataDir); err != nil {
				s.fail(fmt.Errorf("clear the rejoin marker: %w", err))
				return
			}
			s.port.Gate().Open()
			s.log.Info("caught up with the group; voting normally", "applied", applied, "took", time.Since(start).Round(time.Millisecond),
				"entries", s.received.entries.Load(), "bytes", s.received.bytes())
			return
		}
		if time.Since(lastReport) > 3*time.Second {
			lastReport = time.Now()
			s.log.Info("catching up", "applied", applied, "target", target.Index, "percent", 100*applied/max(target.Index, 1),
				"entries", s.received.entries.Load(), "bytes", s.received.bytes(), "snapshot_bytes", s.received.snapshotBytes.Load())
		}
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Store) hasLocalState() (bool, error) {
	if s.repo.HasState() {
		return true, nil
	}
	return raft.HasExistingState(s.logStore, s.logStore, s.snaps)
}

// DataDirHasState reports whether dir holds a store's state: a raft log
// (raft.db or wal/), a repository or a rejoin marker. A missing directory
// has none. The host daemon uses it to plan a restart before opening any
// store.
func DataDirHasState(dir string) bool {
	if existingLogStore(dir) != "" {
		return true
	}
	for _, f := range []string{"repo.db", rejoinFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}
