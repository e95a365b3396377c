package main

import (
	"context"
	"math/rand/v2"
	"time"
)

// KillPublisher kills a publisher with -9 and starts a new incarnation,
// which must resume above everything the old one was told was stable.
const KillPublisher FaultKind = "kill-publisher"

func init() {
	registerKind(&kindSpec{
		Kind: KillPublisher, Order: 50, Weight: 2, Target: targetSource,
		Help: "kill -9 a publisher child and start its next incarnation (alone, or inside a host fault)",
		Plan: func(rng *rand.Rand, f *Fault, cfg planConfig) {
			f.Source = cfg.Sources[rng.IntN(len(cfg.Sources))]
			f.Hold = between(rng, 0, 2*time.Second)
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			return n.restartPublisher(ctx, f.Source, f.Hold)
		},
	})
}
