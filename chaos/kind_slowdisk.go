package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// SlowDisk throttles the writes of a host's disk to a few per second
// (blkio cgroup on the host's loop-mounted disk), then lifts the limit.
const SlowDisk FaultKind = "slow-disk"

func init() {
	registerKind(&kindSpec{
		Kind: SlowDisk, Order: 70, Weight: 2, Target: targetHost, Needs: needDisks, OutlastsLease: true,
		Help: "throttle a host's disk to a few writes per second (blkio cgroup), then lift the limit",
		Plan: func(rng *rand.Rand, f *Fault, _ planConfig) {
			f.Hold = between(rng, 2*time.Second, 8*time.Second)
			f.IOPS = 5 + rng.IntN(46)
		},
		Describe: func(f Fault) string { return fmt.Sprintf(" to %d writes/s", f.IOPS) },
		Inject: func(ctx context.Context, n *nemesis, f Fault, _ *FaultRecord) error {
			h := n.c.host(f.Host)
			if h.disk == nil {
				return errors.New("a slow disk was planned but slow disks are off")
			}
			pid := h.pid()
			if err := h.disk.slow(pid, f.IOPS); err != nil {
				return err
			}
			_ = sleepCtx(ctx, f.Hold)
			return h.disk.unslow(pid)
		},
	})
}
