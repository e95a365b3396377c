package repository

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"umstore/internal/boltfile"
)

// A repository's file is mapped into memory, and bbolt reads its pages from
// the map: a file cut short under a running store (or a page the disk can
// no longer read) faults on the first access. Every call that touches the
// file runs under guard, which makes such a fault (or a panic inside bbolt
// or inside the caller's function) an error instead of the end of the
// process, whichever goroutine made the call: the FSM's, a client's read,
// repair, retention, status.
//
// The first fault ends the repository's use. bbolt rolled the transaction
// back, but a write was cut in the middle and nothing says what else is
// wrong with the file, so every later call (but Close) returns the same
// error without touching the file, Options.OnFault tells the owner, and the
// owner stops: a repository never applies anything after a fault (SPEC §4
// rule 6). The next Open checks the file before mapping it.

// guard runs fn, which uses the bbolt file, with faults turned into errors;
// damage wraps ErrFormat too.
func (r *Repo) guard(op string, fn func() error) error {
	err := r.file.Run(op, fn)
	if err != nil && errors.Is(err, boltfile.ErrDamaged) && !errors.Is(err, ErrFormat) {
		err = fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return err
}

// update runs fn in a write transaction under guard, and commits it if fn
// returns nil.
//
// It is bbolt's DB.Update but for the roll back after a panic: Update's
// rebuilds the free list by reading every page (the file is opened with
// NoFreelistSync), which on a file cut short faults again inside the
// deferred call and leaves bbolt's write lock held, so that Close waits
// forever. Tx.Rollback only releases the transaction; the in-memory free
// list it may leave behind does not matter, as the file is not used again
// after a fault.
func (r *Repo) update(op string, fn func(tx *bolt.Tx) error) error {
	return r.guard(op, func() error {
		tx, err := r.db.Begin(true)
		if err != nil {
			return err
		}
		done := false
		defer func() {
			if !done {
				_ = tx.Rollback()
			}
		}()
		if err := fn(tx); err != nil {
			return err
		}
		err = tx.Commit() // on an error it has rolled back itself
		done = true
		return err
	})
}

// Fault returns the error that made the repository unusable (a fault or
// panic while using its file), or nil.
func (r *Repo) Fault() error { return r.file.Err() }
