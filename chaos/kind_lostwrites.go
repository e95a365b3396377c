package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LostWrites is a power cut of one host: everything its stores wrote but
// did not fsync is lost, then the host starts again on what its disk kept.
//
// Each host's data lives on its own ext4 filesystem on a loop device (see
// disk). A kill -9 loses nothing (the kernel still writes the page cache
// back), so the cut is made in the filesystem: the daemon is frozen
// (SIGSTOP), the filesystem is shut down with EXT4_IOC_SHUTDOWN and
// EXT4_GOING_FLAGS_NOLOGFLUSH (neither the journal nor dirty pages are
// written: what was not synced is gone, as on a power loss), the daemon is
// killed, and the filesystem is unmounted and mounted again (the journal
// replays to its last commit). The disk then holds at least what was
// fsynced and at most what had been written back: the state of a disk
// after a power cut. No kernel module or device-mapper is needed. The
// fault's note lists the files whose content the cut changed.
const LostWrites FaultKind = "lost-writes"

func init() {
	registerKind(&kindSpec{
		Kind: LostWrites, Order: 100, Weight: 2, Target: targetHost, Needs: needDisks,
		Help: "power-cut a host: its disk loses every write not fsynced (ext4 shut down without flushing), then it restarts on what the disk kept",
		Plan: holdBetween(500*time.Millisecond, 3*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			h := n.c.host(f.Host)
			if h.disk == nil {
				return errors.New("lost writes were planned but the hosts have no disks of their own (--slow-disks=false)")
			}
			note, err := powerCut(h)
			rec.Note = note
			if err != nil {
				return err
			}
			n.log.Info("power cut", "host", f.Host, "lost", note)
			_ = sleepCtx(ctx, f.Hold)
			return h.start("restart after a power cut")
		},
	})
}

// ext4 shutdown: EXT4_IOC_SHUTDOWN is _IOR('X', 125, __u32);
// EXT4_GOING_FLAGS_NOLOGFLUSH drops the journal and dirty pages.
const (
	ext4IocShutdown      = 0x8004587D
	ext4GoingNoLogFlush  = 2
	frozenWaitLimit      = 2 * time.Second
	frozenPollInterval   = 5 * time.Millisecond
	processStateStopped  = 'T'
	processStateTraced   = 't'
	processStatePosition = 2 // after ") "
)

// powerCut freezes the host's daemon, cuts its disk's power, kills it and
// brings the disk back, and says which files lost writes.
func powerCut(h *host) (string, error) {
	cut, err := freezeForCut(h)
	if err != nil {
		return "", err
	}
	return cut.finish()
}

// frozenHost is a host whose daemon is frozen for a power cut, with the
// digests of its files taken while nothing could write them.
type frozenHost struct {
	h      *host
	before map[string]fileDigest
}

// freezeForCut freezes the host's daemon (SIGSTOP, and waits until it is
// stopped) and takes its files' digests.
func freezeForCut(h *host) (*frozenHost, error) {
	pid := h.pid()
	if err := h.pause(); err != nil {
		return nil, err
	}
	waitStopped(pid)
	return &frozenHost{h: h, before: fileDigests(h.disk.mount)}, nil
}

// shutdown shuts the frozen host's filesystem down without flushing and
// kills its daemon; its disk is left shut down until remount.
func (c *frozenHost) shutdown() error {
	h := c.h
	d, err := os.Open(h.disk.mount)
	if err != nil {
		h.kill9()
		return err
	}
	err = unix.IoctlSetPointerInt(int(d.Fd()), ext4IocShutdown, ext4GoingNoLogFlush)
	d.Close()
	h.kill9()
	if err != nil {
		return fmt.Errorf("shut down the filesystem of host %s (EXT4_IOC_SHUTDOWN): %w", h.name, err)
	}
	return nil
}

// remount brings the cut host's disk back and says which files lost
// writes.
func (c *frozenHost) remount() (string, error) {
	if err := c.h.disk.remount(); err != nil {
		return "", err
	}
	return lostFiles(c.before, fileDigests(c.h.disk.mount)), nil
}

// finish shuts the disk down, kills the daemon and remounts the disk.
func (c *frozenHost) finish() (string, error) {
	if err := c.shutdown(); err != nil {
		return "", err
	}
	return c.remount()
}

// waitStopped waits (bounded) until process pid is stopped.
func waitStopped(pid int) {
	deadline := time.Now().Add(frozenWaitLimit)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+processStatePosition < len(stat) {
			if c := stat[i+processStatePosition]; c == processStateStopped || c == processStateTraced {
				return
			}
		}
		time.Sleep(frozenPollInterval)
	}
}

// fileDigest is a file's size and content hash.
type fileDigest struct {
	size int64
	sum  [32]byte
}

// fileDigests hashes every regular file under dir.
func fileDigests(dir string) map[string]fileDigest {
	out := map[string]fileDigest{}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		h := sha256.New()
		n, _ := io.Copy(h, f)
		var d fileDigest
		d.size = n
		copy(d.sum[:], h.Sum(nil))
		rel, _ := filepath.Rel(dir, p)
		out[rel] = d
		return nil
	})
	return out
}

// lostFiles says which files the cut changed: gone, shorter, longer, or
// with other content.
func lostFiles(before, after map[string]fileDigest) string {
	var lost []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			lost = append(lost, name+" (gone)")
		case a.size != b.size:
			lost = append(lost, fmt.Sprintf("%s (%d bytes, was %d)", name, a.size, b.size))
		case a.sum != b.sum:
			lost = append(lost, name+" (content)")
		}
	}
	sort.Strings(lost)
	if len(lost) == 0 {
		return fmt.Sprintf("no unsynced writes were lost (%d files compared)", len(before))
	}
	return fmt.Sprintf("unsynced writes lost in %d of %d files: %s", len(lost), len(before), strings.Join(lost, ", "))
}
