package dirlock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
	"umstore/internal/wallclock"
)

// Info describes a lock holder. A flock holder writes it to dir/LOCK.info;
// a lease holder keeps it in every lease record. Other processes read it
// only to say who holds the lock.
type Info struct {
	ID    string    `json:"id"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"` // when this holder took the lock (its own clock)
	Mode  Mode      `json:"mode"`
}

// String describes the holder for people: "pid 1234 on host h (id …, since …)".
func (i Info) String() string {
	return fmt.Sprintf("pid %d on host %s (holder id %s, since %s)",
		i.PID, i.Host, i.ID, i.Since.Local().Format(time.RFC3339))
}

func newInfo(o Options) Info {
	host, _ := os.Hostname()
	return Info{ID: o.HolderID, PID: os.Getpid(), Host: host, Since: wallNow(o), Mode: o.Mode}
}

// LockedError is returned by Acquire when another process holds the lock
// and the caller is not in standby mode. errors.Is(err, ErrLocked) is true.
type LockedError struct {
	Name   string // store name from Options, may be empty
	Dir    string
	Mode   Mode
	Holder *Info // nil when the holder left no readable information
	// ExpiresIn is, in lease mode, how long the holder's lease has left
	// unless it is renewed (on the storage's clock).
	ExpiresIn time.Duration
}

func (e *LockedError) Error() string {
	var b strings.Builder
	if e.Name != "" {
		fmt.Fprintf(&b, "store %s's data directory %s", e.Name, e.Dir)
	} else {
		fmt.Fprintf(&b, "data directory %s", e.Dir)
	}
	fmt.Fprintf(&b, " is %v", ErrLocked)
	if e.Holder != nil {
		fmt.Fprintf(&b, ": %s", e.Holder)
	} else {
		b.WriteString(" (it left no holder information)")
	}
	if e.Mode == ModeLease {
		fmt.Fprintf(&b, "; its lease expires in %v unless renewed", e.ExpiresIn.Round(time.Millisecond))
		b.WriteString("; stop that process, or start this one with --standby to take over when its lease expires")
	} else {
		b.WriteString("; stop that process, or start this one with --standby to take over when it exits")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Unwrap() error { return ErrLocked }

// holderString is what OnWait receives.
func (e *LockedError) holderString() string {
	s := "an unknown process"
	if e.Holder != nil {
		s = e.Holder.String()
	}
	if e.Mode == ModeLease {
		s += fmt.Sprintf(", lease expires in %v unless renewed", e.ExpiresIn.Round(time.Millisecond))
	}
	return s
}

func (e *LockedError) holderID() string {
	if e.Holder == nil {
		return ""
	}
	return e.Holder.ID
}

// readInfoFile reads a holder description; nil if absent or unreadable.
func readInfoFile(path string) *Info {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var i Info
	if json.Unmarshal(data, &i) != nil || i.ID == "" {
		return nil
	}
	return &i
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}

// fileSafe turns a holder id into something usable in a file name.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// deadOnThisHost reports whether the holder ran on this host and its
// process no longer exists. Host names are assumed unique; the answer is
// only used to wait for a lease to expire instead of failing at once.
func deadOnThisHost(i *Info) bool {
	if i == nil || i.PID <= 0 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != i.Host {
		return false
	}
	err = syscall.Kill(i.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// wallNow is this process's wall clock (shifted in tests), without the
// monotonic reading so that it compares with file times.
func wallNow(o Options) time.Time {
	return wallclock.Now().Add(o.wallOffset)
}
