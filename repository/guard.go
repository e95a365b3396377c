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

// guard runs fn, which uses the bbolt file, with faults turned into errors.
func (r *Repo) guard(op string, fn func() error) error {
	if p := r.fault.Load(); p != nil {
		return *p
	}
	err := boltfile.Guard(r.path, op, fn)
	var f *boltfile.Fault
	if !errors.As(err, &f) {
		return err
	}
	err = fmt.Errorf("repository %s is unusable after a fault: %w", r.path, err)
	if errors.Is(err, boltfile.ErrDamaged) {
		err = fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if r.fault.CompareAndSwap(nil, &err) && r.opts.OnFault != nil {
		r.opts.OnFault(err)
	}
	return *r.fault.Load()
}

// update runs fn in a write transaction under guard.
func (r *Repo) update(op string, fn func(tx *bolt.Tx) error) error {
	return r.guard(op, func() error { return r.db.Update(fn) })
}

// Fault returns the error that made the repository unusable (a fault or
// panic while using its file), or nil.
func (r *Repo) Fault() error {
	if p := r.fault.Load(); p != nil {
		return *p
	}
	return nil
}
