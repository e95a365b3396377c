package dirlock

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Lock is held by one store for its whole life.
type Lock interface {
	// Check reports whether the lock is still held with the safety margin
	// to spare. A lease holder must call it before every write batch and
	// stop writing when it returns an error (which wraps ErrLost or
	// ErrReleased). For a flock it fails only after Release.
	Check() error
	// Lost is closed when the lock is lost: a lease that could not be
	// renewed in time or was taken over. A flock is never lost. Release
	// does not close it.
	Lost() <-chan struct{}
	// Release gives the lock up. The caller must have stopped writing. A
	// lease holder marks its lease released so that a standby takes over at
	// its next attempt instead of waiting for expiry. Calling it again is
	// a no-op.
	Release() error
	// HolderID is this holder's id, as written in the lock files.
	HolderID() string
}

// Acquire locks dir (creating it if needed) for the life of a store.
//
// Without opts.Standby it returns a *LockedError (errors.Is ErrLocked) at
// once when another process holds the lock. In standby mode it tries every
// opts.AcquireInterval until it gets the lock or ctx ends. ctx bounds the
// acquisition only; the lock stays held (and a lease renewed) until Release.
func Acquire(ctx context.Context, dir string, opts Options) (Lock, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	o := opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if o.Mode == ModeLease {
		return acquireLease(ctx, dir, o)
	}
	return acquireFlock(ctx, dir, o)
}

// waiter paces a standby's attempts and reports who it is waiting for.
type waiter struct {
	o          Options
	dir        string
	reported   bool
	lastID     string
	lastReport time.Time
}

// wait reports the holder (when due) and sleeps one acquire interval. It
// returns an error when ctx ends first.
func (w *waiter) wait(ctx context.Context, le *LockedError) error {
	return w.sleep(ctx, le, w.o.AcquireInterval)
}

func (w *waiter) sleep(ctx context.Context, le *LockedError, d time.Duration) error {
	if id := le.holderID(); !w.reported || id != w.lastID || time.Since(w.lastReport) >= WaitReportInterval {
		w.reported, w.lastID, w.lastReport = true, id, time.Now()
		if w.o.OnWait != nil {
			w.o.OnWait(le.holderString())
		} else {
			w.o.Logger.Info("waiting for the data directory lock",
				"store", w.o.Name, "dir", w.dir, "mode", w.o.Mode, "holder", le.holderString())
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("gave up waiting for the lock on %s (%s): %w", w.dir, le.holderString(), ctx.Err())
	case <-t.C:
		return nil
	}
}
