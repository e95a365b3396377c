package receiver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// Registration says where a durable receiver resumes and what each group
// told it.
type Registration struct {
	Name string
	// Resume is the first sequence number to deliver: one past Consumed;
	// 0 when no group recorded a position (a new name), which starts at the
	// oldest retained message.
	Resume uint64
	// Consumed is the position chosen under Consensus.
	Consumed  uint64
	Consensus Consensus
	// Groups has one entry per group read, in group order.
	Groups []GroupRegistration
}

// GroupRegistration is one group's answer to a durable receiver's
// registration.
type GroupRegistration struct {
	Group      int    // 1-based
	Registered bool   // its leader recorded the registration
	Known      bool   // it holds the source
	Consumed   uint64 // the position its leader recorded; 0 if none
	Pacing     string // the source's receiver-paced persistence: "", blocking or non-blocking
	Err        string // why it did not register, if it did not
	// Stores are the answers of its stores queried one by one, which the
	// consensus behaviour weighs (a follower may lag its leader).
	Stores []StorePosition
}

// Farewell is what Close left with one group of a durable receiver.
type Farewell struct {
	Group int // 1-based
	// Recorded: the group took the last position and freed the name.
	Recorded bool
	// HeldByAnother: the group holds the name for another session (an
	// earlier incarnation of this receiver not yet expired, or another
	// receiver), so it keeps that session's record: strong names, as UM's
	// receiver-activity-timeout. The next registration weighs the other
	// groups' records too (Consensus).
	HeldByAnother bool
	// Err says why the group took nothing otherwise (unreachable within
	// Close's bound).
	Err string
}

// StorePosition is one store's own record of the receiver.
type StorePosition struct {
	Store    string
	Known    bool   // the store holds the source
	Consumed uint64 // its recorded position; 0 if none
}

// durable is what a named receiver adds: its registration with every
// group, and the goroutines that record its consumption (one per group,
// each with its own connection: recording is never in the way of reading).
type durable struct {
	r       *Receiver
	session string

	mu     sync.Mutex
	reg    *Registration
	handed uint64 // highest sequence number handed to the application (or skipped as lost)
	acked  uint64 // highest acknowledged: the position to record
	closed bool
	// farewells is what Close left with each group (Farewells).
	farewells []Farewell

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	groups []*ackGroup
}

func newDurable(r *Receiver) *durable {
	d := &durable{r: r, session: r.cfg.Session}
	if d.session == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		d.session = hex.EncodeToString(b[:])
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, g := range r.groups {
		d.groups = append(d.groups, &ackGroup{d: d, group: g.Group, client: groupclient.New(g.Group, g.Addrs, r.dialer)})
	}
	return d
}

// Register registers a durable receiver with every group it reads and
// decides where it resumes (Config.Consensus); Read and Follow call it
// themselves the first time. It waits up to RegisterTimeout for every
// group, then goes on with those that answered (at least one); while a
// group's leader says another live receiver holds the name, it waits for
// that one's activity timeout, until ctx ends (ErrNameBusy). A second call
// returns the first registration. Recording consumption starts with it.
func (r *Receiver) Register(ctx context.Context) (Registration, error) {
	if r.durable == nil {
		return Registration{}, ErrNotDurable
	}
	return r.durable.ensure(ctx)
}

// Farewells says, after Close, what Close left with each group of a
// durable receiver, in group order (nil before Close, or when it never
// registered). A group that did not record the last position keeps an
// older one, which a next incarnation under ConsensusLowest resumes from
// (redelivering the difference).
func (r *Receiver) Farewells() []Farewell {
	if r.durable == nil {
		return nil
	}
	r.durable.mu.Lock()
	defer r.durable.mu.Unlock()
	return append([]Farewell(nil), r.durable.farewells...)
}

// Registration returns the durable receiver's registration (zero before
// it registered).
func (r *Receiver) Registration() Registration {
	if r.durable == nil {
		return Registration{}
	}
	r.durable.mu.Lock()
	defer r.durable.mu.Unlock()
	if r.durable.reg == nil {
		return Registration{}
	}
	reg := *r.durable.reg
	reg.Groups = append([]GroupRegistration(nil), reg.Groups...)
	return reg
}

// Ack acknowledges, for a receiver with Config.ExplicitAck (UM
// ume_explicit_ack_only), every message up to seq: the position only moves
// forward, and is recorded at the next acknowledgement interval. It may be
// called from any goroutine; seq must have been delivered (ErrAckAhead).
// Without ExplicitAck it may still be used, to acknowledge ahead of the
// handler's returns within what was delivered.
func (r *Receiver) Ack(seq uint64) error {
	if r.durable == nil {
		return ErrNotDurable
	}
	d := r.durable
	d.mu.Lock()
	defer d.mu.Unlock()
	if seq > d.handed {
		return fmt.Errorf("%w: %d was acknowledged, %d is the last delivered", ErrAckAhead, seq, d.handed)
	}
	d.acked = max(d.acked, seq)
	return nil
}

// Consumed returns a durable receiver's position: the highest sequence
// number acknowledged, or, before any, the one it resumed after.
func (r *Receiver) Consumed() uint64 {
	if r.durable == nil {
		return 0
	}
	return r.durable.position()
}

func (d *durable) position() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reg != nil {
		return max(d.acked, d.reg.Consumed)
	}
	return d.acked
}

// acknowledged is the position this instance acknowledged (0 if none), the
// one its groups are told.
func (d *durable) acknowledged() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.acked
}

// hand records that seq is being handed to the application (a message, or
// the end of a range skipped as lost): from then on it may be acknowledged.
func (d *durable) hand(seq uint64) {
	d.mu.Lock()
	d.handed = max(d.handed, seq)
	d.mu.Unlock()
}

// ack moves the position forward to seq.
func (d *durable) ack(seq uint64) {
	d.mu.Lock()
	d.acked = max(d.acked, seq)
	d.mu.Unlock()
}

// ensure registers once.
func (d *durable) ensure(ctx context.Context) (Registration, error) {
	d.mu.Lock()
	if d.reg != nil {
		reg := *d.reg
		d.mu.Unlock()
		return reg, nil
	}
	if d.closed {
		d.mu.Unlock()
		return Registration{}, errors.New("receiver closed")
	}
	d.mu.Unlock()
	reg, err := d.register(ctx)
	if err != nil {
		return Registration{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return Registration{}, errors.New("receiver closed")
	}
	d.reg = &reg
	// The position resumed after is not acknowledged again: only what this
	// instance consumes is, so a registration never rewrites a group's
	// record with another group's.
	d.handed = max(d.handed, reg.Consumed)
	for _, g := range d.groups {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); g.run() }()
	}
	return reg, nil
}

// register asks every group's leader to register the receiver and every
// store what it records, then decides the resume point.
func (d *durable) register(ctx context.Context) (Registration, error) {
	cfg := d.r.cfg
	wait, cancel := context.WithTimeout(ctx, cfg.RegisterTimeout)
	defer cancel()
	n := len(d.groups)
	answers := make([]groupAnswers, n)
	regs := make([]GroupRegistration, n)
	var wg sync.WaitGroup
	for i, g := range d.groups {
		answers[i] = groupAnswers{group: g.group, stores: len(cfg.Groups[g.group-1])}
		regs[i] = GroupRegistration{Group: g.group}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := g.registerUntil(ctx, wait)
			if err != nil {
				regs[i].Err = err.Error()
				return
			}
			answers[i].registered, answers[i].known, answers[i].consumed = true, rep.Known, rep.Consumed
			regs[i].Registered, regs[i].Known, regs[i].Consumed, regs[i].Pacing = true, rep.Known, rep.Consumed, rep.Pacing
			if cfg.Paced && rep.Known && rep.Pacing == wire.PacingNone {
				d.r.log.Info("registered as a paced receiver of a source without receiver-paced persistence: it holds nothing back", "group", g.group, "receiver", cfg.Name)
			}
		}()
		for _, addr := range cfg.Groups[g.group-1] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if a, ok := d.queryStore(wait, g.group, addr); ok {
					d.mu.Lock() // guards answers[i].answers against the other stores of the group
					answers[i].answers = append(answers[i].answers, a)
					regs[i].Stores = append(regs[i].Stores, StorePosition{Store: a.store, Known: a.known, Consumed: a.consumed})
					d.mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	registered := 0
	var busy, forbidden, lastErr error
	for i := range regs {
		if regs[i].Registered {
			registered++
		}
	}
	for _, g := range d.groups {
		if g.busy != nil {
			busy = g.busy
		}
		if g.lastErr != nil {
			lastErr = g.lastErr
			if isCode(g.lastErr, wire.CodeForbidden) {
				forbidden = g.lastErr
			}
		}
	}
	if busy != nil && registered < n {
		// Another live receiver holds the name in some group: give the
		// name back where this one got it, rather than run beside it.
		for _, g := range d.groups {
			if g.registered {
				g.send(context.Background(), 0, true)
				g.registered = false
			}
		}
		return Registration{}, fmt.Errorf("%w: %w", ErrNameBusy, busy)
	}
	if registered == 0 {
		if forbidden != nil {
			return Registration{}, fmt.Errorf("%w: receiver %q: %w", ErrForbidden, cfg.Name, forbidden)
		}
		if busy != nil {
			return Registration{}, fmt.Errorf("%w: %w", ErrNameBusy, busy)
		}
		if err := ctx.Err(); err != nil {
			return Registration{}, err
		}
		return Registration{}, fmt.Errorf("%w: receiver %q could not register: %w", ErrUnreachable, cfg.Name, lastErr)
	}
	dec := decideResume(resumeInput{consensus: cfg.Consensus, groups: answers})
	reg := Registration{Name: cfg.Name, Consumed: dec.consumed, Consensus: cfg.Consensus, Groups: regs}
	if dec.consumed > 0 {
		reg.Resume = dec.consumed + 1
	}
	d.r.log.Info("durable receiver registered", "receiver", cfg.Name, "resume", reg.Resume, "consumed", reg.Consumed,
		"consensus", cfg.Consensus.String(), "groups_registered", registered, "counted", dec.counted, "ignored", dec.ignored)
	return reg, nil
}

// queryStore asks one store what it records about the receiver.
func (d *durable) queryStore(ctx context.Context, group int, addr string) (storeAnswer, bool) {
	c := groupclient.New(group, []string{addr}, d.r.dialer)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := c.Call(qctx, &wire.ReceiverQuery{Source: d.r.cfg.Source, Receiver: d.r.cfg.Name})
	if err != nil {
		return storeAnswer{}, false
	}
	rep, ok := m.(*wire.ReceiverReport)
	if !ok {
		return storeAnswer{}, false
	}
	a := storeAnswer{store: rep.Store}
	if a.store == "" {
		a.store = addr
	}
	for _, s := range rep.Sources {
		if s.Source != d.r.cfg.Source {
			continue
		}
		a.known = true
		for _, rc := range s.Receivers {
			if rc.Name == d.r.cfg.Name {
				a.consumed = rc.Consumed
			}
		}
	}
	return a, true
}

// close stops recording, then records the last position with every group
// and says goodbye, each within a bound.
func (d *durable) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	started := d.reg != nil
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	if started {
		out := make([]Farewell, len(d.groups))
		var wg sync.WaitGroup
		for i, g := range d.groups {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = g.farewell() }()
		}
		wg.Wait()
		for _, f := range out {
			switch {
			case f.HeldByAnother:
				d.r.log.Warn("closed without recording the last position in a group: it holds the name for another session (an earlier incarnation not yet expired, or another receiver) and keeps that one's record",
					"group", f.Group, "receiver", d.r.cfg.Name, "consumed", d.acknowledged())
			case !f.Recorded:
				d.r.log.Warn("closed without recording the last position in a group: it did not answer in time", "group", f.Group, "receiver", d.r.cfg.Name, "consumed", d.acknowledged(), "err", f.Err)
			}
		}
		d.mu.Lock()
		d.farewells = out
		d.mu.Unlock()
	}
	for _, g := range d.groups {
		g.client.Close()
	}
}
