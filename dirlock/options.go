package dirlock

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Mode selects how a data directory is locked.
type Mode string

const (
	// ModeFlock takes an exclusive flock(2) on dir/LOCK. It is the default:
	// the kernel (or the file server) drops the lock when the holder dies,
	// so a standby takes over at once. Use it on local disks and on shared
	// file systems whose locks are reliable (NFSv4, SAN cluster file systems).
	ModeFlock Mode = "flock"
	// ModeLease keeps a lease in dir/LEASE/ that the holder renews every
	// KeepAlive. Use it where flock cannot be trusted (NFSv3, some network
	// file systems); a standby takes over once the lease has expired.
	ModeLease Mode = "lease"
)

// ParseMode turns a flag or deployment-file value into a Mode. The empty
// string means ModeFlock.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeFlock:
		return ModeFlock, nil
	case ModeLease:
		return ModeLease, nil
	}
	return "", fmt.Errorf("unknown lock mode %q: use %q (default) or %q", s, ModeFlock, ModeLease)
}

// Defaults used when the corresponding Options field is zero.
const (
	DefaultKeepAlive            = time.Second
	DefaultFlockAcquireInterval = 200 * time.Millisecond
	// The lease-mode acquire interval defaults to 2×KeepAlive and the lease
	// duration to 3×KeepAlive; the safety margin defaults to a third of the
	// lease duration.
)

// Options configure Acquire. The zero value is valid: a flock that fails
// fast when the directory is already locked.
type Options struct {
	// Mode is ModeFlock (default, also for "") or ModeLease.
	Mode Mode
	// Name names the store in messages, e.g. "G1S1". Optional.
	Name string
	// Standby makes Acquire wait for the lock (until its context ends)
	// instead of failing with ErrLocked.
	Standby bool
	// KeepAlive is how often a lease holder renews its lease (default 1s).
	KeepAlive time.Duration
	// AcquireInterval is how often a waiting process tries again. Default:
	// 200ms for flock, 2×KeepAlive for lease. In lease mode it must be
	// longer than KeepAlive; Validate refuses anything else (see doc.go).
	AcquireInterval time.Duration
	// LeaseDuration is how long a lease stays valid after a renewal, judged
	// on the storage's clock (default 3×KeepAlive).
	LeaseDuration time.Duration
	// SafetyMargin: Check fails once less than this is left of the holder's
	// own view of its lease (default LeaseDuration/3). It must cover the
	// longest write batch, the storage's file-timestamp granularity and
	// clock-rate drift between the hosts.
	SafetyMargin time.Duration
	// HolderID identifies this process in lock and lease files; it must be
	// unique per process (default: hostname-pid-random).
	HolderID string
	// OnWait, if set, is called while Acquire waits in standby mode with a
	// description of the current holder: at the first failed attempt,
	// whenever the holder changes, and every WaitReportInterval in between.
	// Without it the same is logged at Info level.
	OnWait func(holder string)
	// Logger receives the package's logs (default slog.Default()).
	Logger *slog.Logger

	// wallOffset shifts this process's view of the wall clock; tests use
	// it to pretend that hosts' clocks disagree.
	wallOffset time.Duration
}

// WaitReportInterval is how often OnWait is called while the holder stays
// the same.
const WaitReportInterval = 10 * time.Second

// withDefaults returns o with every zero field filled in.
func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeFlock
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.AcquireInterval == 0 {
		if o.Mode == ModeLease {
			o.AcquireInterval = 2 * o.KeepAlive
		} else {
			o.AcquireInterval = DefaultFlockAcquireInterval
		}
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 3 * o.KeepAlive
	}
	if o.SafetyMargin == 0 {
		o.SafetyMargin = o.LeaseDuration / 3
	}
	if o.HolderID == "" {
		o.HolderID = defaultHolderID()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Validate reports whether the options (after defaults are applied to
// zero fields) are usable. Acquire calls it too.
func (o Options) Validate() error {
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"keep-alive", o.KeepAlive},
		{"acquire interval", o.AcquireInterval},
		{"lease duration", o.LeaseDuration},
		{"safety margin", o.SafetyMargin},
	} {
		if d.v < 0 {
			return fmt.Errorf("lock %s must not be negative (got %v)", d.name, d.v)
		}
	}
	o = o.withDefaults()
	if o.Mode != ModeLease {
		return nil
	}
	if o.AcquireInterval <= o.KeepAlive {
		return fmt.Errorf("lock acquire interval (%v) must be longer than the keep-alive period (%v): "+
			"the holder must renew its lease more often than standbys look at it", o.AcquireInterval, o.KeepAlive)
	}
	if o.SafetyMargin >= o.LeaseDuration {
		return fmt.Errorf("lock safety margin (%v) must be shorter than the lease duration (%v)", o.SafetyMargin, o.LeaseDuration)
	}
	if o.KeepAlive >= o.LeaseDuration-o.SafetyMargin {
		return fmt.Errorf("lock keep-alive period (%v) must be shorter than lease duration (%v) minus safety margin (%v), "+
			"or the holder would step down between two renewals", o.KeepAlive, o.LeaseDuration, o.SafetyMargin)
	}
	return nil
}

// Sentinel errors. Use errors.Is.
var (
	// ErrLocked means another process holds the lock. The error returned
	// by Acquire is a *LockedError that names the holder.
	ErrLocked = errors.New("locked by another process")
	// ErrLost means a lease holder can no longer be sure that it holds its
	// lease; it must stop writing.
	ErrLost = errors.New("data directory lock lost")
	// ErrReleased is returned by Check after Release.
	ErrReleased = errors.New("data directory lock released")
)

func defaultHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(4))
}
