package storegroup

import (
	"errors"
	"fmt"

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
		s.client.close()
		s.bg.Wait() // the start goroutine has either started raft or given up
		if r := s.raftNode(); r != nil {
			if transfer && r.State() == raft.Leader && s.failed.Load() == nil {
				if err := r.LeadershipTransfer().Error(); err != nil {
					s.log.Info("leadership transfer before stopping did not complete", "err", err)
				}
			}
			if err := r.Shutdown().Error(); err != nil {
				s.closeErr = errors.Join(s.closeErr, err)
			}
		}
		s.rtrans.Close()
		applied := s.repo.AppliedIndex()
		if err := s.closeStorage(); err != nil && !errors.Is(err, repository.ErrClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
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
