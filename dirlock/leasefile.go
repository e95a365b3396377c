package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The lease lives in dir/LEASE/, one file per renewal:
//
//	LEASE/lease.00000000000000000042   the newest version is the lease
//	LEASE/lease.00000000000000000041   the one before (kept for readers)
//	LEASE/probe-<holder id>            touched by a process to read the storage clock
//	LEASE/.tmp-*                       a record being written
//
// Every change of the lease, whether a renewal by the holder, a takeover
// by a standby or a release, is a compare-and-swap from version n to n+1:
// the record is written and fsynced under a temporary name and then
// hard-linked to lease.<n+1>. link(2) fails with EEXIST when that name
// already exists, so of all the processes that read version n and want to
// replace it, exactly one succeeds; the others learn at once that they lost
// (a holder that finds its next version taken knows it was taken over; a
// standby that loses the race looks again and finds a fresh lease). Version
// numbers only grow and only the current holder removes old versions, so a
// paused holder can never overwrite the lease of the process that replaced
// it. Because the record is complete before it gets its name, readers
// never see a half-written lease, and its modification time, stamped by
// the storage when the record was written, is the time of the renewal on
// the storage's clock.
const (
	leaseDirName = "LEASE"
	leasePrefix  = "lease."
	probePrefix  = "probe-"
	tmpPrefix    = ".tmp-"
)

// leaseRecord is the content of one lease version.
type leaseRecord struct {
	Info
	Version  uint64    `json:"version"`
	LeaseMS  int64     `json:"lease_ms"` // the holder's LeaseDuration
	Renewed  time.Time `json:"renewed"`  // the holder's wall clock at writing; informational
	Released bool      `json:"released,omitempty"`
}

func versionName(v uint64) string { return fmt.Sprintf("%s%020d", leasePrefix, v) }

// leaseState is what a process sees of the lease.
type leaseState struct {
	found   bool
	version uint64
	rec     *leaseRecord // nil when unreadable
	mtime   time.Time    // storage clock
}

// newestVersion lists ldir and returns the highest lease version in it.
func newestVersion(ldir string) (uint64, bool, error) {
	entries, err := os.ReadDir(ldir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var newest uint64
	found := false
	for _, e := range entries {
		v, ok := parseVersion(e.Name())
		if ok && (!found || v > newest) {
			newest, found = v, true
		}
	}
	return newest, found, nil
}

func parseVersion(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, leasePrefix)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// readLease reads the newest lease version.
func readLease(ldir string) (leaseState, error) {
	for attempt := 0; ; attempt++ {
		v, found, err := newestVersion(ldir)
		if err != nil || !found {
			return leaseState{}, err
		}
		f, err := os.Open(filepath.Join(ldir, versionName(v)))
		if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
			continue // removed by its holder after a newer one appeared: list again
		}
		if err != nil {
			return leaseState{}, err
		}
		data, rerr := io.ReadAll(f)
		st, serr := f.Stat()
		f.Close()
		if rerr != nil {
			return leaseState{}, rerr
		}
		if serr != nil {
			return leaseState{}, serr
		}
		s := leaseState{found: true, version: v, mtime: st.ModTime()}
		var rec leaseRecord
		if json.Unmarshal(data, &rec) == nil && rec.ID != "" {
			s.rec = &rec
		}
		return s, nil
	}
}

// writeVersion creates lease version v holding rec. It fails with an error
// matching fs.ErrExist when version v already exists (another process won).
func writeVersion(ldir string, v uint64, rec leaseRecord) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(ldir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, filepath.Join(ldir, versionName(v))); err != nil {
		// Over NFS a retransmitted LINK can report EEXIST although the
		// first one succeeded; the temporary file's link count tells.
		var st syscall.Stat_t
		if !errors.Is(err, fs.ErrExist) || syscall.Stat(tmp, &st) != nil || st.Nlink != 2 {
			return err
		}
	}
	// The version exists now, so report success whatever the directory
	// sync says: failing here would make the holder retry this version,
	// find it taken and step down for nothing.
	_ = syncDir(ldir)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// storageSkew measures how far the storage's clock is ahead of this
// process's wall clock, by writing a probe file and reading back the
// modification time the storage stamped on it. The local time is taken
// after the write has returned, so the result errs on the low side: a
// standby's estimate of "now on the storage" is never ahead of the truth
// (but for timestamp granularity), so it never judges a lease expired
// early.
func storageSkew(ldir string, o Options) (time.Duration, error) {
	path := filepath.Join(ldir, probePrefix+fileSafe(o.HolderID))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(wallNow(o).Format(time.RFC3339Nano)+"\n"), 0); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.ModTime().Sub(wallNow(o)), nil
}

// judge tells whether the lease in s is still live, judged on the
// storage's clock. It returns nil when the lease is absent, released or
// expired, and otherwise a *LockedError naming the holder.
func judge(ldir string, s leaseState, dir string, o Options) (*LockedError, time.Duration, error) {
	if !s.found || (s.rec != nil && s.rec.Released) {
		return nil, 0, nil
	}
	skew, err := storageSkew(ldir, o)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the storage clock: %w", err)
	}
	d := o.LeaseDuration
	if s.rec != nil && time.Duration(s.rec.LeaseMS)*time.Millisecond > d {
		d = time.Duration(s.rec.LeaseMS) * time.Millisecond // the holder's own promise, if longer
	}
	left := s.mtime.Add(d).Sub(wallNow(o).Add(skew))
	if left < 0 {
		return nil, skew, nil
	}
	le := &LockedError{Name: o.Name, Dir: dir, Mode: ModeLease, ExpiresIn: left}
	if s.rec != nil {
		info := s.rec.Info
		le.Holder = &info
	}
	return le, skew, nil
}

// liveLeaseGuard is used in flock mode: it returns a *LockedError when a
// lease-mode process holds a live lease on dir. Failures to look are
// ignored (the flock decides).
func liveLeaseGuard(dir string, o Options) *LockedError {
	ldir := filepath.Join(dir, leaseDirName)
	s, err := readLease(ldir)
	if err != nil || !s.found || (s.rec != nil && s.rec.Released) {
		return nil
	}
	le, _, err := judge(ldir, s, dir, o)
	os.Remove(filepath.Join(ldir, probePrefix+fileSafe(o.HolderID)))
	if err != nil {
		return nil
	}
	return le
}
