package dirlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// leaseLock is a held lease and its renewal loop.
type leaseLock struct {
	dir, ldir string
	o         Options
	info      Info
	valid     time.Duration // LeaseDuration − SafetyMargin
	lost      chan struct{}
	stop      chan struct{}
	done      chan struct{}

	mu       sync.Mutex
	version  uint64        // our newest version
	lastOK   time.Duration // sinceBoot() just before writing that version
	lostErr  error
	released bool

	releaseOnce sync.Once
	releaseErr  error
}

func acquireLease(ctx context.Context, dir string, o Options) (Lock, error) {
	ldir := filepath.Join(dir, leaseDirName)
	if err := os.MkdirAll(ldir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory lease: %w", err)
	}
	defer os.Remove(filepath.Join(ldir, probePrefix+fileSafe(o.HolderID)))
	w := &waiter{o: o, dir: dir}
	skewWarned := false
	var deadUntil time.Time // waiting for the lease of a dead process on this host
	lostRaces := 0
	slowClaims := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("data directory lease on %s: %w", dir, err)
		}
		s, err := readLease(ldir)
		if err != nil {
			return nil, fmt.Errorf("data directory lease: reading %s: %w", ldir, err)
		}
		le, skew, err := judge(ldir, s, dir, o)
		if err != nil {
			return nil, fmt.Errorf("data directory lease: %w", err)
		}
		if !skewWarned && (skew > time.Second || skew < -time.Second) {
			skewWarned = true
			o.Logger.Warn("this host's clock differs from the storage's clock; lease expiry is judged on the storage's clock, but check time synchronisation",
				"dir", dir, "storage_minus_local", skew.Round(time.Millisecond))
		}
		if le == nil {
			l, err := claimLease(dir, ldir, s, o)
			if errors.Is(err, errSlowClaim) && slowClaims < maxSlowClaims {
				// One slow write (a loaded disk, a pause of this process)
				// need not end the start; storage that stays this slow does.
				slowClaims++
				o.Logger.Warn("claiming the data directory lease was too slow; handed it back, trying again",
					"dir", dir, "attempt", slowClaims, "err", err)
				continue
			}
			if err != nil {
				return nil, err
			}
			if l != nil {
				return l, nil
			}
			// Another process changed the lease first: look again at once,
			// but do not spin if that keeps happening.
			if lostRaces++; lostRaces > 3 {
				select {
				case <-ctx.Done():
				case <-time.After(o.KeepAlive):
				}
			}
			continue
		}
		lostRaces = 0
		if o.Standby {
			if err := w.wait(ctx, le); err != nil {
				return nil, err
			}
			continue
		}
		// Not a standby. If the holder is a dead process of this host (a
		// crash and a quick restart), wait for its lease to expire rather
		// than fail; give up if the lease is renewed after all.
		if deadOnThisHost(le.Holder) {
			if deadUntil.IsZero() {
				deadUntil = time.Now().Add(le.ExpiresIn + o.AcquireInterval)
				o.Logger.Info("the lease holder is a process of this host that has exited; waiting for its lease to expire",
					"dir", dir, "holder", le.holderString())
			}
			if time.Now().Before(deadUntil) {
				if err := w.sleep(ctx, le, min(o.AcquireInterval, le.ExpiresIn+10*time.Millisecond)); err != nil {
					return nil, err
				}
				continue
			}
		}
		return nil, le
	}
}

// maxSlowClaims is how many claims in a row acquireLease hands back for
// taking too long before it gives up.
const maxSlowClaims = 3

// errSlowClaim marks a claim whose write took longer than the lease is
// valid; the claim was handed back (or left to expire).
var errSlowClaim = errors.New("the storage is too slow for these lease settings")

// leaseClaimWritten runs after a claim's version is written; tests use it to
// make a write slow.
var leaseClaimWritten = func() {}

// claimLease tries to take the lease from state s (absent, released or
// expired) by writing the next version. It returns (nil, nil) when another
// process got there first.
func claimLease(dir, ldir string, s leaseState, o Options) (*leaseLock, error) {
	next := s.version + 1
	info := newInfo(o)
	t0 := sinceBoot()
	rec := leaseRecord{Info: info, Version: next, LeaseMS: o.LeaseDuration.Milliseconds(), Renewed: info.Since}
	err := writeVersion(ldir, next, rec)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil
	}
	if err == nil {
		leaseClaimWritten()
	}
	if err != nil {
		return nil, fmt.Errorf("data directory lease: writing %s: %w", filepath.Join(ldir, versionName(next)), err)
	}
	// A stale directory listing (possible on network file systems) could
	// have shown an old version whose name had since been removed; confirm
	// that ours is now the newest.
	if newest, _, err := newestVersion(ldir); err != nil || newest != next {
		o.Logger.Warn("lease takeover superseded by a newer version; looking again", "dir", dir, "ours", next, "newest", newest, "err", err)
		return nil, nil
	}
	l := &leaseLock{
		dir: dir, ldir: ldir, o: o, info: info,
		valid: o.LeaseDuration - o.SafetyMargin,
		lost:  make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		version: next, lastOK: t0,
	}
	if took := sinceBoot() - t0; took > l.valid {
		// The lease we just wrote is already too old to write under. Hand
		// it on rather than leave it to expire, and say what is wrong.
		rec.Version, rec.Released = next+1, true
		_ = writeVersion(ldir, next+1, rec)
		return nil, fmt.Errorf("data directory lease: writing the lease took %v, longer than lease duration %v minus safety margin %v; "+
			"%w (a longer lock keepalive lengthens the lease)", took.Round(time.Millisecond), o.LeaseDuration, o.SafetyMargin, errSlowClaim)
	}
	l.cleanup()
	if s.found {
		prev := "released"
		if s.rec == nil || !s.rec.Released {
			prev = "expired"
		}
		holder := "unknown"
		if s.rec != nil {
			holder = s.rec.Info.String()
		}
		o.Logger.Info("took over the data directory lease", "store", o.Name, "dir", dir, "holder", o.HolderID,
			"version", next, "previous_lease", prev, "previous_holder", holder)
	} else {
		o.Logger.Info("data directory lease acquired", "store", o.Name, "dir", dir, "holder", o.HolderID, "version", next)
	}
	go l.run()
	return l, nil
}

// cleanup removes lease versions older than the one before ours and
// leftovers of crashed writers.
func (l *leaseLock) cleanup() {
	entries, err := os.ReadDir(l.ldir)
	if err != nil {
		return
	}
	l.mu.Lock()
	v := l.version
	l.mu.Unlock()
	ourProbe := probePrefix + fileSafe(l.o.HolderID)
	for _, e := range entries {
		name := e.Name()
		if ev, ok := parseVersion(name); ok {
			if ev+1 < v {
				os.Remove(filepath.Join(l.ldir, name))
			}
			continue
		}
		if (strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, probePrefix)) && name != ourProbe {
			// Other processes' probes and temporary files are left alone
			// for a while: they may be in the middle of using them.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 10*l.o.LeaseDuration+time.Minute {
				os.Remove(filepath.Join(l.ldir, name))
			}
		}
	}
}

func (l *leaseLock) run() {
	defer close(l.done)
	t := time.NewTicker(l.o.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if !l.renew() {
			return
		}
	}
}

// renew writes the next lease version. It returns false once the lease is
// lost.
//
// The holder judges its lease on its own clock, never on the storage's: a
// renewal counts from the moment just before it was written (the storage
// stamps it later, so the lease on the storage runs at least that long),
// and it counts only if it was written before the previous one ran out
// (LeaseDuration − SafetyMargin after it). A holder that was stopped,
// starved or cut off from the storage past that point steps down even if
// its write then succeeds, because a standby may already have judged the
// lease expired.
func (l *leaseLock) renew() bool {
	l.mu.Lock()
	if l.lostErr != nil || l.released {
		l.mu.Unlock()
		return false
	}
	v, last := l.version, l.lastOK
	l.mu.Unlock()

	t0 := sinceBoot()
	if age := t0 - last; age > l.valid {
		l.lose(fmt.Errorf("%w: the lease was last renewed %v ago, more than lease duration %v minus safety margin %v (was this process stopped or the storage unreachable?); another process may have taken over",
			ErrLost, age.Round(time.Millisecond), l.o.LeaseDuration, l.o.SafetyMargin))
		return false
	}
	rec := leaseRecord{Info: l.info, Version: v + 1, LeaseMS: l.o.LeaseDuration.Milliseconds(), Renewed: wallNow(l.o)}
	err := writeVersion(l.ldir, v+1, rec)
	if errors.Is(err, fs.ErrExist) {
		holder := "another process"
		if s, rerr := readLease(l.ldir); rerr == nil && s.rec != nil {
			holder = s.rec.Info.String()
		}
		l.lose(fmt.Errorf("%w: the lease was taken over by %s", ErrLost, holder))
		return false
	}
	if err != nil {
		// Keep trying at every tick; Check fails once the lease runs out.
		l.o.Logger.Warn("could not renew the data directory lease; will retry", "dir", l.dir, "err", err,
			"lease_left", (l.valid - (sinceBoot() - last)).Round(time.Millisecond))
		return true
	}
	if newest, _, err := newestVersion(l.ldir); err == nil && newest != v+1 {
		l.lose(fmt.Errorf("%w: a newer lease version (%d) than ours (%d) appeared", ErrLost, newest, v+1))
		return false
	}
	if took := sinceBoot() - last; took > l.valid {
		l.lose(fmt.Errorf("%w: renewing the lease finished %v after the previous renewal, more than lease duration %v minus safety margin %v",
			ErrLost, took.Round(time.Millisecond), l.o.LeaseDuration, l.o.SafetyMargin))
		return false
	}
	l.mu.Lock()
	if l.lostErr != nil { // Check gave up on us meanwhile
		l.mu.Unlock()
		return false
	}
	l.version, l.lastOK = v+1, t0
	l.mu.Unlock()
	if v > 0 {
		os.Remove(filepath.Join(l.ldir, versionName(v-1)))
	}
	return true
}

// lose marks the lease lost (once) and closes Lost.
func (l *leaseLock) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(err)
}

func (l *leaseLock) loseLocked(err error) {
	if l.lostErr != nil || l.released {
		return
	}
	l.lostErr = err
	close(l.lost)
	l.o.Logger.Error("data directory lease lost: this process must stop writing", "store", l.o.Name, "dir", l.dir, "err", err)
}

// Check fails when the lease may have run out: when more than
// LeaseDuration − SafetyMargin has passed, on this host's boot clock,
// since the last renewal began. It does no I/O.
func (l *leaseLock) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return ErrReleased
	}
	if l.lostErr != nil {
		return l.lostErr
	}
	if age := sinceBoot() - l.lastOK; age > l.valid {
		l.loseLocked(fmt.Errorf("%w: the lease was last renewed %v ago, more than lease duration %v minus safety margin %v (was this process stopped or the storage unreachable?); another process may have taken over",
			ErrLost, age.Round(time.Millisecond), l.o.LeaseDuration, l.o.SafetyMargin))
		return l.lostErr
	}
	return nil
}

func (l *leaseLock) Lost() <-chan struct{} { return l.lost }

func (l *leaseLock) HolderID() string { return l.o.HolderID }

// Release stops renewing and, if the lease is still ours, writes a
// released version so that a standby takes over at its next attempt.
func (l *leaseLock) Release() error {
	l.releaseOnce.Do(func() { l.releaseErr = l.release() })
	return l.releaseErr
}

func (l *leaseLock) release() error {
	close(l.stop)
	<-l.done // no renewal runs from here on

	l.mu.Lock()
	l.released = true
	v, lost := l.version, l.lostErr != nil
	l.mu.Unlock()
	defer os.Remove(filepath.Join(l.ldir, probePrefix+fileSafe(l.o.HolderID)))
	if lost {
		return nil
	}
	rec := leaseRecord{Info: l.info, Version: v + 1, LeaseMS: l.o.LeaseDuration.Milliseconds(), Renewed: wallNow(l.o), Released: true}
	err := writeVersion(l.ldir, v+1, rec)
	if errors.Is(err, fs.ErrExist) {
		return nil // someone took over already; nothing of ours to release
	}
	if err != nil {
		return fmt.Errorf("data directory lease: marking the lease released (a standby will take over when it expires): %w", err)
	}
	if v > 0 {
		os.Remove(filepath.Join(l.ldir, versionName(v-1)))
	}
	l.o.Logger.Info("data directory lease released", "store", l.o.Name, "dir", l.dir, "version", v+1)
	return nil
}
