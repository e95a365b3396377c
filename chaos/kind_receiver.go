package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// KillReceiver kills a source's durable receiver child with -9 and starts
// its next incarnation under the same name, which must resume with no gap
// and redeliver no more than the receiver had not yet recorded
// (checkDurable).
const KillReceiver FaultKind = "kill-receiver"

func init() {
	registerKind(&kindSpec{
		Kind: KillReceiver, Order: 110, Weight: 2, Target: targetSource,
		Help: "kill -9 a durable receiver child and start its next incarnation under the same name, with the same session or a new one (alone, or inside a host fault)",
		Plan: func(rng *rand.Rand, f *Fault, cfg planConfig) {
			f.Source = cfg.Sources[rng.IntN(len(cfg.Sources))]
			f.Hold = between(rng, 0, 2*time.Second)
			f.Takeover = rng.IntN(3) == 0
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			if f.Takeover {
				rec.Note = "new session"
			}
			return n.restartReceiver(ctx, f.Source, f.Hold, f.Takeover)
		},
	})
}

// restartReceiver kills a durable receiver with -9, waits, and starts its
// next incarnation: with the killed one's session (let in at once) or,
// with takeover, a new one (let in once the stores expired the killed
// session, after their receiver-activity-timeout).
func (n *nemesis) restartReceiver(ctx context.Context, source string, down time.Duration, takeover bool) error {
	r := n.rcvs[source]
	if r == nil {
		return fmt.Errorf("no durable receiver for source %q", source)
	}
	r.kill9()
	_ = sleepCtx(ctx, down)
	return r.start(takeover)
}

// drawNestedReceiverKill draws, for a host or link fault, whether a
// durable receiver is also killed during it, which and when. Only called
// when kill-receiver is among the kinds drawn, so that the plans of runs
// without it stay as they were.
func drawNestedReceiverKill(rng *rand.Rand, f *Fault, cfg planConfig) {
	if rng.IntN(3) != 0 {
		return
	}
	f.AlsoKillReceiver = cfg.Sources[rng.IntN(len(cfg.Sources))]
	f.ReceiverAt = between(rng, 0, f.Hold)
	f.Takeover = rng.IntN(3) == 0
}
