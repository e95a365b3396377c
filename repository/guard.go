package repository

import (
	"errors"
	"fmt"

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

// Fault returns the error that made the repository unusable (a fault or
// panic while using its file), or nil.
func (r *Repo) Fault() error { return r.file.Err() }
