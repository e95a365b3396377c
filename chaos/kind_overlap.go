package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"
)

// Overlap is two faults at once, on the two hosts or on a host and the
// link, where every other kind strikes one thing at a time:
//
//   - partition+restart: the link is cut, then Fault.Host is killed -9
//     and, half the hold later, started again while the link is still cut;
//     the link heals at the end of the hold;
//   - pause+catch-up: Fault.Host is wiped and started empty, and once its
//     stores are catching up (or waiting their turn) the other host is
//     frozen (SIGSTOP) for the hold, then thawed;
//   - power-cut+replace: Fault.Host is replaced (as ReplaceHost: killed,
//     wiped, started empty at another address) and, once its stores are
//     catching up, the other host loses power (as LostWrites: every write
//     it had not fsynced is gone) and comes back after the hold, so that
//     the stores the replaced ones copy from restart on what their disk
//     kept while the copies are under way. Drawn only with disks of the
//     hosts' own (--slow-disks).
//
// The liveness rule for a pair: while it lasts the groups may lose their
// quorum (a partition with a host down leaves group 1 one reachable
// member of three; a paused host stops the catch-up its members serve), so
// publishing may stall for the whole pair; once both faults are healed the
// deployment must be restored within --restore-timeout, and no daemon may
// exit by itself, as after every host fault. The safety rules hold
// throughout.
const Overlap FaultKind = "overlap"

// The pairs an Overlap draws.
const (
	pairPartitionRestart = "partition+restart"
	pairPauseCatchUp     = "pause+catch-up"
	pairPowerCutReplace  = "power-cut+replace"
)

func init() {
	registerKind(&kindSpec{
		Kind: Overlap, Order: 160, Weight: 1, Target: targetHost, OutlastsLease: true,
		Help: "two faults at once: a partition while a host restarts, the other host paused while a wiped host catches up, or the other host's power cut while a replaced host catches up",
		Plan: func(rng *rand.Rand, f *Fault, cfg planConfig) {
			f.Hold = between(rng, 2*time.Second, 6*time.Second)
			pairs := []string{pairPauseCatchUp}
			if cfg.Partitions {
				pairs = append(pairs, pairPartitionRestart)
			}
			if cfg.SlowDisks {
				pairs = append(pairs, pairPowerCutReplace)
			}
			f.Pair = pairs[rng.IntN(len(pairs))]
		},
		Describe: func(f Fault) string { return " " + f.Pair },
		Prepare: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			if f.Pair != pairPowerCutReplace {
				return nil
			}
			return prepareReplacement(ctx, n, f, rec)
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			rec.Note = joinNote(f.Pair, rec.Note)
			h := n.c.host(f.Host)
			switch f.Pair {
			case pairPartitionRestart:
				if n.part == nil {
					return errors.New("an overlap with a partition was planned but partitions are off")
				}
				if err := n.part.cut(n.c.hosts[0].address(), n.c.hosts[1].address(), n.c.storePorts()); err != nil {
					return err
				}
				h.kill9()
				_ = sleepCtx(ctx, f.Hold/2)
				err := h.start("restart during a partition (overlap)")
				_ = sleepCtx(ctx, f.Hold-f.Hold/2)
				return errors.Join(err, n.part.heal())
			case pairPauseCatchUp:
				other := n.c.otherHost(h)
				h.kill9()
				if err := h.wipe(); err != nil {
					return err
				}
				if err := h.start("restart with the data directory wiped (overlap)"); err != nil {
					return err
				}
				waitJoining(ctx, h, 20*time.Second)
				if err := other.pause(); err != nil {
					return err
				}
				_ = sleepCtx(ctx, f.Hold)
				return other.resume()
			case pairPowerCutReplace:
				return n.powerCutDuringReplace(ctx, f, rec)
			}
			return fmt.Errorf("unknown overlap %q", f.Pair)
		},
	})
}

// waitJoining waits (at most limit) until one of the host's stores is
// catching up or waiting its turn to join.
func waitJoining(ctx context.Context, h *host, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		sts, err := h.status(ctx)
		if err == nil {
			for _, s := range sts {
				if s.CatchingUp || s.WaitingToJoin {
					return
				}
			}
		}
		if sleepCtx(ctx, 50*time.Millisecond) != nil {
			return
		}
	}
}

// powerCutDuringReplace replaces f.Host (started at once, not after the
// hold) and cuts the other host's power once the replaced host's stores
// are catching up; the other host starts again after the hold.
func (n *nemesis) powerCutDuringReplace(ctx context.Context, f Fault, rec *FaultRecord) error {
	other := n.c.otherHost(n.c.host(f.Host))
	if other.disk == nil {
		return errors.New("an overlap with a power cut was planned but the hosts have no disks of their own (--slow-disks=false)")
	}
	h, mv, err := n.moveWiped(f)
	if err != nil {
		return err
	}
	if err := h.start(fmt.Sprintf("replaced (overlap): data directory wiped, at %s with %s", mv.addr, filepath.Base(mv.file.Path))); err != nil {
		return err
	}
	waitJoining(ctx, h, 20*time.Second)
	note, err := powerCut(other)
	rec.Note = joinNote(rec.Note, "power cut of "+other.name+": "+note)
	if err != nil {
		return err
	}
	n.log.Info("power cut while a replaced host catches up", "host", other.name, "lost", note)
	_ = sleepCtx(ctx, f.Hold)
	return other.start("restart after a power cut while the other host was replaced (overlap)")
}

// joinNote joins the non-empty parts of a fault's note.
func joinNote(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
