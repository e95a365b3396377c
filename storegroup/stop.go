package storegroup

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// Close stops the store: a leader first hands leadership to another
// member, then raft stops, connections close and files are closed.
func (s *Store) Close() error { return s.stop(true) }

// Abort stops the store without handing over leadership, as close to a
// crash as a store in a shared process can get: the group notices only when
// heartbeats stop. Tests use it; operators use Close.
func (s *Store) Abort() error { return s.stop(false) }

// fail stops the store after an error it cannot continue from.
func (s *Store) fail(err error) {
	if !s.failed.CompareAndSwap(nil, &err) {
		return
	}
	s.log.Error("store stopping itself", "err", err)
	go s.Close()
}

func (s *Store) stop(transfer bool) error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.client.HangUp()
		s.bg.Wait() // the start goroutine has either started raft or given up
		// A healthy raft answers every proposal the connections wait for:
		// they end before it stops. One that met a faulted log may never
		// answer; it is stopped first (below), so that what waits on it
		// gives up.
		healthy := !s.faulted()
		if healthy {
			s.client.WaitConns(0)
		}
		if r := s.raftNode(); r != nil {
			if transfer && r.State() == raft.Leader && s.failed.Load() == nil {
				if err := r.LeadershipTransfer().Error(); err != nil {
					s.log.Info("leadership transfer before stopping did not complete", "err", err)
				}
			}
			if err := s.shutdownRaft(r); err != nil {
				s.closeErr = errors.Join(s.closeErr, err)
			}
		}
		s.port.Close()
		if !healthy {
			// Raft has answered what it will; the early answers it never
			// decided are given up, and the connections get a bounded wait.
			s.proposer.Abandon(raft.ErrRaftShutdown)
			if !s.client.WaitConns(raftShutdownAfterFault) {
				s.log.Warn("client connections still waiting after the store failed; stopping the store without them", "waited", raftShutdownAfterFault)
			}
		}
		if err := s.closeStorage(); err != nil && !errors.Is(err, repository.ErrClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		applied := s.repo.AppliedIndex() // closing committed what was pending
		if transfer && s.closeErr == nil && s.failed.Load() == nil {
			if err := writeClean(s.cfg.DataDir, applied); err != nil {
				s.closeErr = errors.Join(s.closeErr, fmt.Errorf("mark the store stopped cleanly: %w", err))
			}
		}
		if err := s.lock.Release(); err != nil {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		close(s.done)
	})
	return s.closeErr
}

// closeStorage closes the raft log and the repository, whichever are open.
func (s *Store) closeStorage() error {
	var errs []error
	if s.logStore != nil {
		errs = append(errs, s.logStore.Close())
	}
	if s.repo != nil {
		errs = append(errs, s.repo.Close())
	}
	return errors.Join(errs...)
}

// raftShutdownAfterFault bounds the wait for raft's goroutines once the
// store failed. A raft goroutine that met a faulted or damaged log ended
// there (raftLogStore's Goexit), and may leave another waiting for it
// forever: raft's pipeline decoder waits on a channel that only the ended
// replicator closes. Without the bound the store never finished stopping
// (TestFaultWhileRunningStopsOnlyThatStore hung under the race detector).
const raftShutdownAfterFault = 5 * time.Second

// faulted reports whether the store failed or its raft log faulted: raft
// or the connections waiting on it may then never finish.
func (s *Store) faulted() bool {
	return s.failed.Load() != nil || (s.logStore != nil && s.logStore.file.Err() != nil)
}

// shutdownRaft stops raft and waits for it: for good when the store is
// healthy, at most raftShutdownAfterFault when it failed.
func (s *Store) shutdownRaft(r *raft.Raft) error {
	fut := r.Shutdown()
	if !s.faulted() {
		return fut.Error()
	}
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(raftShutdownAfterFault):
		s.log.Warn("raft did not finish stopping after the store failed; stopping the store without waiting for it", "waited", raftShutdownAfterFault)
		return nil
	}
}
