package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind names one kind of fault the nemesis injects. The kinds are
// defined one per file (kind_*.go, see kindSpec). Every host fault hits one
// host only, and the deployment is healed and restored before the next
// one: the 2+1/1+2 layout is designed to survive the loss of one host, not
// of both.
type FaultKind string

// Fault is one planned fault.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Host is the host a host fault hits.
	Host string `json:"host,omitempty"`
	// Source is the publisher a KillPublisher fault hits, or the durable
	// receiver a KillReceiver fault hits.
	Source string `json:"source,omitempty"`
	// Hold is how long the fault lasts before it is healed.
	Hold time.Duration `json:"hold"`
	// Quiet is how long the deployment runs normally after it is restored,
	// before the next fault.
	Quiet time.Duration `json:"quiet"`
	// AlsoKillPublisher, for a host fault, names a publisher that is also
	// killed with -9 and restarted PublisherAt into the fault.
	AlsoKillPublisher string        `json:"also_kill_publisher,omitempty"`
	PublisherAt       time.Duration `json:"publisher_at,omitempty"`
	// AlsoKillReceiver, for a host fault, names a source whose durable
	// receiver is also killed with -9 and restarted ReceiverAt into the
	// fault.
	AlsoKillReceiver string        `json:"also_kill_receiver,omitempty"`
	ReceiverAt       time.Duration `json:"receiver_at,omitempty"`
	// Takeover says the durable receiver a KillReceiver fault (or the one
	// killed inside a host fault) restarts with a session of its own,
	// rather than the killed one's: it is let in only once the stores
	// expired the killed session (receiver-activity-timeout).
	Takeover bool `json:"receiver_takeover,omitempty"`
	// IOPS is the write operations per second a SlowDisk fault allows.
	IOPS int `json:"iops,omitempty"`
	// Stores is how many of the host's stores a CorruptStore fault damages.
	Stores int `json:"stores,omitempty"`
	// Graceful says the host is stopped with SIGTERM rather than kill -9
	// before its files are damaged.
	Graceful bool `json:"graceful,omitempty"`
	// Seed drives the choices a fault makes when it is injected (which
	// files and offsets a CorruptStore damages, what a Stranger sends).
	Seed uint64 `json:"seed,omitempty"`
	// ClockStep is how far a ClockJump steps the host's wall clock
	// (forward or back); ClockThrough says it then steps it to
	// -ClockStep, past the true time the other way, before it puts it
	// back.
	ClockStep    time.Duration `json:"clock_step,omitempty"`
	ClockThrough bool          `json:"clock_through,omitempty"`
	// Pair is the two faults an Overlap injects at once (kind_overlap.go).
	Pair string `json:"pair,omitempty"`
}

func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.Host != "" {
		b.WriteString(" host " + f.Host)
	}
	if s := kindOf(f.Kind); s != nil && s.Describe != nil {
		b.WriteString(s.Describe(f))
	}
	if f.Source != "" {
		b.WriteString(" source " + f.Source)
	}
	fmt.Fprintf(&b, " for %v", f.Hold)
	if f.Takeover && f.AlsoKillReceiver == "" {
		b.WriteString(", new session")
	}
	if f.AlsoKillPublisher != "" {
		fmt.Fprintf(&b, " (+ kill-publisher %s at %v)", f.AlsoKillPublisher, f.PublisherAt)
	}
	if f.AlsoKillReceiver != "" {
		fmt.Fprintf(&b, " (+ kill-receiver %s at %v", f.AlsoKillReceiver, f.ReceiverAt)
		if f.Takeover {
			b.WriteString(", new session")
		}
		b.WriteString(")")
	}
	return b.String()
}

// hostFault reports whether f hits a host or the link (and so is followed
// by a wait for full restoration).
func (f Fault) hostFault() bool {
	s := kindOf(f.Kind)
	return s == nil || s.Target != targetSource
}

// planConfig is what the planner needs to know.
type planConfig struct {
	Faults     int
	Partitions bool
	SlowDisks  bool
	Sources    []string
	// Only, if not empty, restricts the faults drawn to these kinds.
	Only []FaultKind
	// LongOutages makes half of the host crashes and pauses last 35-45 s:
	// longer than source-activity-timeout (30 s), so a publisher restarted
	// meanwhile registers while the host's groups are unreachable.
	LongOutages bool
	// LeaseLocks says the stores lock their data directories with leases
	// (--lock lease): the kinds that outlast a lease are not drawn.
	LeaseLocks bool
	// PreviousBin says a build of the previous release was given
	// (--previous-bin): upgrade-host may be drawn.
	PreviousBin bool
}

// planSchedule draws a schedule of faults from rng: the same seed always
// gives the same plan.
func planSchedule(rng *rand.Rand, cfg planConfig) []Fault {
	var kinds []*kindSpec
	total := 0
	receiverKills := false
	for _, s := range kindRegistry {
		if s.available(cfg) && (len(cfg.Only) == 0 || slices.Contains(cfg.Only, s.Kind)) {
			kinds = append(kinds, s)
			total += s.Weight
			receiverKills = receiverKills || s.Kind == KillReceiver
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	var plan []Fault
	for range cfg.Faults {
		n := rng.IntN(total)
		var spec *kindSpec
		for _, s := range kinds {
			if n < s.Weight {
				spec = s
				break
			}
			n -= s.Weight
		}
		f := Fault{Kind: spec.Kind, Quiet: between(rng, 500*time.Millisecond, 3*time.Second)}
		spec.Plan(rng, &f, cfg)
		// Drawn only when asked for, so the plans of a seed do not change
		// with the option off.
		if cfg.LongOutages && spec.LongOutage && rng.IntN(2) == 0 {
			f.Hold = between(rng, 35*time.Second, 45*time.Second)
		}
		if spec.Target != targetSource {
			f.Host = hostAddrs[rng.IntN(len(hostAddrs))].name
			if spec.Target == targetLink {
				f.Host = "" // a partition cuts both hosts off from each other
			}
			if rng.IntN(3) == 0 {
				f.AlsoKillPublisher = cfg.Sources[rng.IntN(len(cfg.Sources))]
				f.PublisherAt = between(rng, 0, f.Hold)
			}
			if receiverKills {
				drawNestedReceiverKill(rng, &f, cfg)
			}
		}
		plan = append(plan, f)
	}
	return plan
}

// nemesis injects faults into one schedule's deployment.
type nemesis struct {
	c         *cluster
	pubs      map[string]*pubProc
	rcvs      map[string]*rcvProc  // each source's durable receiver
	followers map[string]*follower // each source's in-process follower
	part      *partitioner         // nil when partitions are off
	// move is the replace-host fault being injected, once prepared.
	move *replacement
	hist *History
	log  *slog.Logger
	// exe and dir are this program (run again as a stranger) and the
	// schedule's directory (for the stranger's log).
	exe, dir string
}

// inject runs one fault from start to heal and records it; it returns the
// record's index in the history (for the restoration time, which the
// caller records). It returns once the fault is healed (hosts running,
// link whole, publisher restarted); waiting for the deployment to be
// restored is the caller's job.
func (n *nemesis) inject(ctx context.Context, f Fault) (int, error) {
	rec := FaultRecord{Kind: f.Kind, Target: f.Host + f.Source, Start: time.Now()}
	spec := kindOf(f.Kind)
	if spec != nil && spec.Target == targetLink {
		rec.Target = hostAddrs[0].name + "|" + hostAddrs[1].name
	}
	n.log.Info("fault", "fault", f.String())
	if spec != nil && spec.Prepare != nil {
		if err := spec.Prepare(ctx, n, f, &rec); err != nil {
			n.move = nil
			rec.End = time.Now()
			return n.hist.Fault(rec), err
		}
	}
	// The publisher and receiver kills inside a host fault happen in the
	// background, at their offsets; the fault's heal waits for them.
	var pubDone chan error
	if f.AlsoKillPublisher != "" {
		pubDone = make(chan error, 1)
		go func() {
			if err := sleepCtx(ctx, f.PublisherAt); err != nil {
				pubDone <- err
				return
			}
			start := time.Now()
			err := n.restartPublisher(ctx, f.AlsoKillPublisher, 300*time.Millisecond)
			n.hist.Fault(FaultRecord{Kind: KillPublisher, Target: f.AlsoKillPublisher, Start: start, End: time.Now(), Note: "during " + string(f.Kind)})
			pubDone <- err
		}()
	}
	var rcvDone chan error
	if f.AlsoKillReceiver != "" {
		rcvDone = make(chan error, 1)
		go func() {
			if err := sleepCtx(ctx, f.ReceiverAt); err != nil {
				rcvDone <- err
				return
			}
			start := time.Now()
			err := n.restartReceiver(ctx, f.AlsoKillReceiver, 300*time.Millisecond, f.Takeover)
			note := "during " + string(f.Kind)
			if f.Takeover {
				note += ", new session"
			}
			n.hist.Fault(FaultRecord{Kind: KillReceiver, Target: f.AlsoKillReceiver, Start: start, End: time.Now(), Note: note})
			rcvDone <- err
		}()
	}
	var err error
	if spec == nil {
		err = fmt.Errorf("unknown fault %q", f.Kind)
	} else {
		err = spec.Inject(ctx, n, f, &rec)
	}
	if pubDone != nil {
		err = errors.Join(err, <-pubDone)
	}
	if rcvDone != nil {
		err = errors.Join(err, <-rcvDone)
	}
	rec.End = time.Now()
	return n.hist.Fault(rec), err
}

// restartPublisher kills a publisher with -9, waits, and starts its next
// incarnation.
func (n *nemesis) restartPublisher(ctx context.Context, source string, down time.Duration) error {
	p := n.pubs[source]
	if p == nil {
		return fmt.Errorf("no publisher for source %q", source)
	}
	p.kill9()
	_ = sleepCtx(ctx, down)
	return p.start()
}

// healAll undoes whatever may still be in force: a paused host is thawed,
// a stopped one started, the link healed.
func (n *nemesis) healAll() error {
	var errs []error
	if n.part != nil {
		errs = append(errs, n.part.heal())
	}
	for _, h := range n.c.hosts {
		errs = append(errs, h.resume())
		if h.disk != nil && !h.running() {
			errs = append(errs, h.disk.ensureMounted())
		}
		if !h.running() {
			errs = append(errs, h.start("restart while healing everything"))
		}
	}
	return errors.Join(errs...)
}
