package dirlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"umstore/internal/atomicfile"
)

// File names in the data directory (flock mode).
const (
	lockFileName     = "LOCK"      // flocked, never written, never removed
	lockInfoFileName = "LOCK.info" // the holder's Info, for other processes' messages
)

// flockLock is an exclusive flock(2) on dir/LOCK. The open file
// description holds the lock; the kernel (or the file server) releases it
// when the process dies, however it dies. The LOCK file itself is never
// removed: removing a locked file would let the next process lock a new
// inode while the old one is still held.
type flockLock struct {
	f    *os.File
	dir  string
	o    Options
	lost chan struct{} // never closed

	mu       sync.Mutex
	released bool
}

func acquireFlock(ctx context.Context, dir string, o Options) (Lock, error) {
	path := filepath.Join(dir, lockFileName)
	// Go opens files close-on-exec, so child processes never inherit the
	// lock.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	w := &waiter{o: o, dir: dir}
	for {
		le, err := tryFlock(f, dir, o)
		if err != nil {
			f.Close()
			return nil, err
		}
		if le == nil {
			break
		}
		if !o.Standby {
			f.Close()
			return nil, le
		}
		if err := w.wait(ctx, le); err != nil {
			f.Close()
			return nil, err
		}
	}
	l := &flockLock{f: f, dir: dir, o: o, lost: make(chan struct{})}
	info := newInfo(o)
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := atomicfile.Write(filepath.Join(dir, lockInfoFileName), append(data, '\n'), 0o644); err != nil {
		// The lock is held all the same; only other processes' messages
		// get poorer.
		o.Logger.Warn("could not write lock holder information", "file", filepath.Join(dir, lockInfoFileName), "err", err)
	}
	o.Logger.Info("data directory locked", "store", o.Name, "dir", dir, "mode", ModeFlock, "holder", o.HolderID)
	return l, nil
}

// tryFlock makes one non-blocking attempt. It returns (nil, nil) when the
// lock is ours, a *LockedError when someone else holds it, or an error
// when locking itself does not work.
func tryFlock(f *os.File, dir string, o Options) (*LockedError, error) {
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		// Guard against a lease-mode process running the same store (the
		// two modes do not see each other's locks): a live lease wins.
		if le := liveLeaseGuard(dir, o); le != nil {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			return le, nil
		}
		return nil, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return &LockedError{Name: o.Name, Dir: dir, Mode: ModeFlock,
			Holder: readInfoFile(filepath.Join(dir, lockInfoFileName))}, nil
	default:
		return nil, fmt.Errorf("data directory lock: flock %s: %w (if this file system cannot lock files, use lock mode %q)",
			f.Name(), err, ModeLease)
	}
}

func (l *flockLock) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return ErrReleased
	}
	return nil
}

func (l *flockLock) Lost() <-chan struct{} { return l.lost }

func (l *flockLock) HolderID() string { return l.o.HolderID }

func (l *flockLock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	// Remove our description while we still hold the lock, so that we
	// never remove the next holder's.
	if err := os.Remove(filepath.Join(l.dir, lockInfoFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.o.Logger.Warn("could not remove lock holder information", "err", err)
	}
	uerr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	cerr := l.f.Close()
	l.o.Logger.Info("data directory lock released", "store", l.o.Name, "dir", l.dir, "mode", ModeFlock)
	if uerr != nil {
		return fmt.Errorf("data directory lock: unlock: %w", uerr)
	}
	if cerr != nil {
		return fmt.Errorf("data directory lock: %w", cerr)
	}
	return nil
}
