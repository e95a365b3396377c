package main

import (
	"context"
	"slices"
	"time"
)

// UpgradeHost restarts a host on the other binary: a rolling upgrade (or
// a downgrade before finalization) in the middle of the other faults.
//
// It is drawn only with --previous-bin (the newest release before the
// head, built from RELEASES' revision). A schedule that draws it plans its
// deployment with the previous release and starts both hosts on it, as an
// operator's deployment that is about to be upgraded. Each upgrade-host
// stops the host gracefully and starts it, after the hold, on the other
// binary: the new one if it ran the previous, else the previous, until
// both hosts have run the new binary at once. From then on the groups may
// have raised their format level (docs/operations.md, "Upgrading and going
// back"), after which going back is not supported, so the fault restarts
// the host on the new binary again.
const UpgradeHost FaultKind = "upgrade-host"

func init() {
	registerKind(&kindSpec{
		Kind: UpgradeHost, Order: 170, Weight: 2, Target: targetHost, Needs: needPreviousBin,
		Help: "stop a host gracefully and start it on the other binary (--previous-bin: the previous release, or the new one), never back to the previous once both hosts ran the new one",
		Plan: holdBetween(500*time.Millisecond, 3*time.Second),
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			h := n.c.host(f.Host)
			to, why := n.c.otherBinary(h)
			rec.Note = why
			h.stop()
			_ = sleepCtx(ctx, f.Hold)
			h.setBin(to)
			n.c.noteBinaries()
			return h.start(why)
		},
	})
}

// upgrades reports whether a plan restarts hosts on the other binary.
func upgrades(plan []Fault) bool {
	return slices.ContainsFunc(plan, func(f Fault) bool { return f.Kind == UpgradeHost })
}

// runsPrevious reports whether h runs the previous release's binary.
func (c *cluster) runsPrevious(h *host) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.previous != "" && h.binary() == c.previous
}

// otherBinary returns the binary h restarts on for upgrade-host, and why.
func (c *cluster) otherBinary(h *host) (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case h.binary() == c.previous:
		return c.bin, "upgraded to the new binary"
	case c.final:
		return c.bin, "restarted on the new binary: both hosts ran it, the groups' level may be final, going back is not supported"
	}
	return c.previous, "taken back to the previous release (a downgrade before finalization)"
}

// noteBinaries marks the deployment final once every host runs the new
// binary.
func (c *cluster) noteBinaries() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if h.binary() != c.bin {
			return
		}
	}
	c.final = true
}

// binary is the directory of the umstored the host's next start runs.
func (h *host) binary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bin
}

// setBin makes the host's next start run the umstored in dir.
func (h *host) setBin(dir string) {
	h.mu.Lock()
	h.bin = dir
	h.mu.Unlock()
}
