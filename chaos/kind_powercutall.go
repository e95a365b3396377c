package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// PowerCutAll is a power cut of the whole site: both hosts lose every
// write they had not fsynced, at the same instant, and both start again
// on what their disks kept.
//
// Both daemons are frozen first (so neither writes, or acknowledges,
// anything after the other's cut), then both filesystems are shut down
// without flushing (as LostWrites does for one), both daemons killed and
// both disks mounted again. Unlike every other host fault no host is left
// running: no store holds anything its disk did not keep, so an
// acknowledged message survives only if a quorum of its group had synced
// it before acknowledging. The liveness rule is the one of every host
// fault: once both hosts are started again the deployment must be restored
// within --restore-timeout; publishing stalls for the whole cut.
const PowerCutAll FaultKind = "power-cut-all"

func init() {
	registerKind(&kindSpec{
		Kind: PowerCutAll, Order: 140, Weight: 1, Target: targetLink, Needs: needDisks,
		Help: "power-cut both hosts at once: both disks lose every write not fsynced, then both restart on what their disks kept",
		Plan: holdBetween(500*time.Millisecond, 3*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			note, err := powerCutAll(n.c.hosts)
			rec.Note = note
			if err != nil {
				return err
			}
			n.log.Info("power cut of every host", "lost", note)
			_ = sleepCtx(ctx, f.Hold)
			var errs []error
			for _, h := range n.c.hosts {
				errs = append(errs, h.start("restart after a power cut of every host"))
			}
			return errors.Join(errs...)
		},
	})
}

// powerCutAll freezes every host's daemon, then cuts every disk, kills
// every daemon and brings every disk back; the note says, per host, which
// files lost writes.
func powerCutAll(hosts []*host) (string, error) {
	var frozen []*frozenHost
	var errs []error
	for _, h := range hosts {
		if h.disk == nil {
			errs = append(errs, fmt.Errorf("host %s has no disk of its own (--slow-disks=false): a power cut needs one", h.name))
			continue
		}
		c, err := freezeForCut(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		frozen = append(frozen, c)
	}
	for _, c := range frozen {
		errs = append(errs, c.shutdown())
	}
	var notes []string
	for _, c := range frozen {
		note, err := c.remount()
		errs = append(errs, err)
		notes = append(notes, c.h.name+": "+note)
	}
	return strings.Join(notes, "; "), errors.Join(errs...)
}
