package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DiskFull fills a host's disk to the last block while the publishers
// publish, keeps it full for the fault's hold, then frees the space.
//
// The filler is one file beside the host's data directory on its loop
// disk, grown with fallocate (as root, so the blocks ext4 reserves for
// root go too) until the filesystem refuses even one block, and topped up
// every fillInterval while the hold lasts (a store that deletes a file, a
// compacted log segment, would otherwise find room again). The image on
// the machine's own disk stays sparse: fallocate marks the blocks taken
// without writing them. A store that cannot write stops (SPEC §4 rule 6:
// stop rather than diverge, keep what it has, never skip an entry); a
// stopped store stays stopped until its unit is restarted
// (docs/operations.md, "A failed store": fix the cause, restart the unit),
// so once the space is freed the harness restarts the host's daemon, as
// an operator would, if any of its stores stopped; the stores then replay
// what they refused and catch up. The fault's note names the stores that
// stopped and why.
const DiskFull FaultKind = "disk-full"

// fillInterval is how often a full disk is topped up during the hold.
const fillInterval = 100 * time.Millisecond

// fillFile is the filler's name, beside the data directory.
const fillFile = "chaos-disk-full.fill"

func init() {
	registerKind(&kindSpec{
		Kind: DiskFull, Order: 150, Weight: 1, Target: targetHost, Needs: needDisks, OutlastsLease: true,
		Help: "fill a host's disk to the last block while publishing, hold it full, free the space (restarting the daemon if a store stopped)",
		Plan: holdBetween(2*time.Second, 6*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			h := n.c.host(f.Host)
			if h.disk == nil {
				return errors.New("disk-full was planned but the hosts have no disks of their own (--slow-disks=false)")
			}
			path := filepath.Join(h.disk.mount, fillFile)
			filled, err := fillDisk(path)
			if err != nil {
				_ = os.Remove(path)
				return err
			}
			n.log.Info("disk full", "host", f.Host, "filled", filled)
			deadline := time.Now().Add(f.Hold)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if _, err := fillDisk(path); err != nil {
					_ = os.Remove(path)
					return err
				}
				_ = sleepCtx(ctx, fillInterval)
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("free host %s's disk: remove %s: %w", f.Host, path, err)
			}
			// Let the stores that were waiting for a write see it fail or
			// pass before their state is read.
			_ = sleepCtx(ctx, time.Second)
			if !h.running() && n.c.runsPrevious(h) {
				// The previous release's daemon exits once every store
				// stopped itself (checkExits): its supervisor starts it.
				rec.Note = fmt.Sprintf("filled %d MiB; the previous release's daemon exited, its stores stopped on the full disk (fixed since 6d0338b)", filled>>20)
				return h.start("restart after the disk was freed: the previous release's daemon had exited on the full disk, as its supervisor would")
			}
			stopped, err := stoppedStores(ctx, h)
			if err != nil {
				return err
			}
			if len(stopped) == 0 {
				rec.Note = fmt.Sprintf("filled %d MiB; no store stopped", filled>>20)
				return nil
			}
			rec.Note = fmt.Sprintf("filled %d MiB; stopped, restarted with the daemon: %s", filled>>20, strings.Join(stopped, "; "))
			h.stop()
			return h.start("restart after the disk was freed: stores had stopped on a full disk")
		},
	})
}

// fillDisk grows the file at path with fallocate until the filesystem
// under it has no block left, and returns the file's size.
func fillDisk(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("fill a disk: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := st.Size()
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return off, fmt.Errorf("fill a disk: statfs: %w", err)
	}
	const block = 4096
	size := max(int64(fs.Bfree)*int64(fs.Bsize), block)
	for size >= block {
		err := unix.Fallocate(int(f.Fd()), 0, off, size)
		switch {
		case err == nil:
			off += size
		case errors.Is(err, unix.ENOSPC):
			size /= 2
		default:
			return off, fmt.Errorf("fill a disk: fallocate %s: %w", path, err)
		}
	}
	return off, nil
}

// stoppedStores lists the host's stores that report themselves failed,
// each with its error.
func stoppedStores(ctx context.Context, h *host) ([]string, error) {
	sts, err := h.status(ctx)
	if err != nil {
		return nil, fmt.Errorf("read host %s's status after its disk was freed: %w", h.name, err)
	}
	var out []string
	for _, s := range sts {
		if s.State == "failed" {
			out = append(out, s.Name+": "+s.Error)
		}
	}
	sort.Strings(out)
	return out, nil
}
