package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// kindSpec is everything the harness knows about one kind of fault: what
// it hits, what the machine must offer for it, how a plan draws its
// parameters and how the nemesis injects and heals it. Each kind is defined
// in a file of its own (kind_*.go) and registers itself from init, so a new
// kind is one new file: its spec, its injection, and whatever the checker
// must learn about it recorded into the History.
type kindSpec struct {
	Kind FaultKind
	// Order is the kind's place in the planner's weighted draw. The planner
	// walks the kinds in Order, so a kind added later must take an Order
	// after every existing one, or every seed's plans change.
	Order int
	// Weight is the kind's share of the draws among the kinds in use.
	Weight int
	// Help describes the fault in one line (for --help and the docs).
	Help string
	// Target is what one fault of the kind hits.
	Target faultTarget
	// Needs is what the machine must offer to inject the kind.
	Needs need
	// LongOutage makes half of these faults last 35-45 s with
	// --long-outages.
	LongOutage bool
	// OutlastsLease says the fault keeps a daemon from renewing its
	// stores' data directory leases for longer than a lease lasts (it is
	// frozen, or its disk throttled): a lease holder then steps down by
	// design (dirlock: its stores stop before writing again), so the kind
	// is not drawn with --lock lease.
	OutlastsLease bool
	// Plan draws f.Hold and the kind's own parameters from rng. f.Quiet is
	// drawn before it and, for host faults, the host and a nested publisher
	// kill after it.
	Plan func(rng *rand.Rand, f *Fault, cfg planConfig)
	// Describe returns the kind's parameters for Fault.String (with a
	// leading space), or "".
	Describe func(f Fault) string
	// Prepare, if set, runs first, before the clock of a nested publisher
	// or receiver kill starts (replace-host writes the new deployment file
	// and hands it to the clients that need it, which restarts them).
	Prepare func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error
	// Inject runs one fault from start to heal (rec.Note may say what it
	// did); waiting for the deployment to be restored is the caller's job.
	Inject func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error
}

// faultTarget is what a fault hits.
type faultTarget int

const (
	// targetHost: one host (Fault.Host); the deployment is restored after.
	targetHost faultTarget = iota
	// targetLink: the link between the two hosts; restored after.
	targetLink
	// targetSource: one publisher (Fault.Source); nothing to restore.
	targetSource
)

// need is what a kind needs from the machine.
type need int

const (
	needNothing need = iota
	// needPartitions: iptables and root (--partitions).
	needPartitions
	// needDisks: each host on a loop-mounted ext4 disk of its own
	// (--slow-disks).
	needDisks
	// needPreviousBin: a build of the previous release (--previous-bin).
	needPreviousBin
)

// kindRegistry holds every kind, in Order.
var kindRegistry []*kindSpec

// registerKind adds a kind; called from the init of its file.
func registerKind(s *kindSpec) {
	if s.Kind == "" || s.Plan == nil || s.Inject == nil || s.Weight <= 0 {
		panic(fmt.Sprintf("chaos: incomplete fault kind %+v", s))
	}
	for _, o := range kindRegistry {
		if o.Kind == s.Kind || o.Order == s.Order {
			panic(fmt.Sprintf("chaos: fault kind %s registered twice, or with the order of %s", s.Kind, o.Kind))
		}
	}
	kindRegistry = append(kindRegistry, s)
	slices.SortFunc(kindRegistry, func(a, b *kindSpec) int { return a.Order - b.Order })
}

// kindOf returns the spec of kind k, nil if there is none.
func kindOf(k FaultKind) *kindSpec {
	for _, s := range kindRegistry {
		if s.Kind == k {
			return s
		}
	}
	return nil
}

// allKinds lists every registered kind, in Order.
func allKinds() []FaultKind {
	out := make([]FaultKind, len(kindRegistry))
	for i, s := range kindRegistry {
		out[i] = s.Kind
	}
	return out
}

// kindNames lists the kinds for --help.
func kindNames() string {
	var names []string
	for _, k := range allKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// available reports whether a run configured by cfg can inject the kind.
func (s *kindSpec) available(cfg planConfig) bool {
	if cfg.LeaseLocks && s.OutlastsLease {
		return false
	}
	switch s.Needs {
	case needPartitions:
		return cfg.Partitions
	case needDisks:
		return cfg.SlowDisks
	case needPreviousBin:
		return cfg.PreviousBin
	}
	return true
}

// between draws a duration in [lo, hi], rounded to 100 ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)).Round(100*time.Millisecond)
}

// holdBetween is a Plan that draws only the fault's Hold.
func holdBetween(lo, hi time.Duration) func(*rand.Rand, *Fault, planConfig) {
	return func(rng *rand.Rand, f *Fault, _ planConfig) { f.Hold = between(rng, lo, hi) }
}
