package main

import (
	"context"
	"time"
)

// The faults of a host's process: crash, crash with a replaced disk, crash
// while catching up, hang.
const (
	// KillHost is a host crash (kill -9 of its daemon), then a restart
	// with its state.
	KillHost FaultKind = "kill-host"
	// WipeHost is a host crash, then a restart with its data directory
	// gone (a replaced disk): its stores must rejoin empty, staged.
	WipeHost FaultKind = "wipe-host"
	// WipeCrash is WipeHost, then another crash while the empty stores
	// are catching up, then a restart with what they had caught up.
	WipeCrash FaultKind = "wipe-crash"
	// PauseHost freezes a host (SIGSTOP) and thaws it (SIGCONT): a hung
	// machine, a long GC pause, a VM migration.
	PauseHost FaultKind = "pause-host"
)

func init() {
	registerKind(&kindSpec{
		Kind: KillHost, Order: 10, Weight: 3, Target: targetHost, LongOutage: true,
		Help: "kill -9 a host's daemon, restart it with its state",
		Plan: holdBetween(1*time.Second, 5*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			h := n.c.host(f.Host)
			h.kill9()
			_ = sleepCtx(ctx, f.Hold)
			return h.start("restart with state after kill -9")
		},
	})
	registerKind(&kindSpec{
		Kind: WipeHost, Order: 20, Weight: 2, Target: targetHost,
		Help: "kill -9 a host's daemon, move its data directory aside, restart it empty (its stores rejoin one per group at a time)",
		Plan: holdBetween(1*time.Second, 5*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			h := n.c.host(f.Host)
			h.kill9()
			if err := h.wipe(); err != nil {
				return err
			}
			_ = sleepCtx(ctx, f.Hold)
			return h.start("restart with the data directory wiped")
		},
	})
	registerKind(&kindSpec{
		Kind: WipeCrash, Order: 30, Weight: 1, Target: targetHost,
		Help: "as wipe-host, then kill -9 again while the empty stores catch up, and restart with what they had",
		Plan: holdBetween(1*time.Second, 5*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			rec.Note = "crashed again while catching up"
			return wipeCrash(ctx, n.c.host(f.Host), f.Hold)
		},
	})
	registerKind(&kindSpec{
		Kind: PauseHost, Order: 40, Weight: 2, Target: targetHost, LongOutage: true, OutlastsLease: true,
		Help: "SIGSTOP a host's daemon, then SIGCONT it",
		Plan: holdBetween(500*time.Millisecond, 6*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			h := n.c.host(f.Host)
			if err := h.pause(); err != nil {
				return err
			}
			_ = sleepCtx(ctx, f.Hold)
			return h.resume()
		},
	})
}

// wipeCrash wipes a host, restarts it, crashes it again while its empty
// stores catch up (or wait for their turn), and restarts it with what they
// had by then.
func wipeCrash(ctx context.Context, h *host, hold time.Duration) error {
	h.kill9()
	if err := h.wipe(); err != nil {
		return err
	}
	if err := h.start("restart with the data directory wiped"); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		sts, err := h.status(ctx)
		joining := false
		for _, s := range sts {
			joining = joining || s.CatchingUp || s.WaitingToJoin
		}
		if err == nil && joining {
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	_ = sleepCtx(ctx, hold/10)
	h.kill9()
	_ = sleepCtx(ctx, hold)
	return h.start("restart after a crash during catch-up")
}
