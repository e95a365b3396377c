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
	var busy, lastErr error
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
		if busy != nil {
			return Registration{}, fmt.Errorf("%w: %w", ErrNameBusy, busy)
		}
		if err := ctx.Err(); err != nil {
			return Registration{}, err
		}
		return Registration{}, fmt.Errorf("%w: receiver %q could not register: %v", ErrUnreachable, cfg.Name, lastErr)
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

// ackGroup records a durable receiver's consumption with one group.
type ackGroup struct {
	d      *durable
	group  int
	client *groupclient.Client

	// Set by registerUntil before run starts, then run's own.
	registered bool // the group's leader holds the name for this session
	// everRegistered: some registration of this session with the group
	// succeeded, so a later "busy" means the session was expired there.
	everRegistered bool
	known          bool // the group holds the source (else the name is held in memory only)
	regAt          time.Time
	recorded       uint64 // the last position the group acknowledged
	busy           error  // the last "name busy" answer
	lastErr        error
	warned         bool
}

// callTimeout bounds one acknowledgement or registration round trip.
const callTimeout = 2 * time.Second

// registerOnce asks the group's leader to register the receiver.
func (g *ackGroup) registerOnce(ctx context.Context) (*wire.ReceiverRegistered, error) {
	cfg := g.d.r.cfg
	cctx, cancel := context.WithTimeout(ctx, groupclient.CallTimeout)
	defer cancel()
	m, err := g.client.Call(cctx, &wire.RegisterReceiver{Source: cfg.Source, Receiver: cfg.Name, Session: g.d.session, Paced: cfg.Paced})
	if err != nil {
		return nil, err
	}
	rep, ok := m.(*wire.ReceiverRegistered)
	if !ok {
		return nil, fmt.Errorf("%w: registration answered with frame type %d", wire.ErrMalformed, m.Type())
	}
	g.registered, g.everRegistered, g.known, g.regAt = true, true, rep.Known, time.Now()
	g.recorded = max(g.recorded, rep.Consumed)
	g.busy, g.warned = nil, false // a later refusal is news again
	return rep, nil
}

// registerUntil registers, retrying: an unreachable group until wait ends,
// a group that says the name is busy until ctx ends.
func (g *ackGroup) registerUntil(ctx, wait context.Context) (*wire.ReceiverRegistered, error) {
	for {
		rep, err := g.registerOnce(ctx)
		if err == nil {
			return rep, nil
		}
		g.lastErr = err
		deadline := wait
		pause := 200 * time.Millisecond
		if isCode(err, wire.CodeBusy) {
			g.busy = err
			if !g.warned {
				g.warned = true
				g.d.r.log.Warn("waiting: another live receiver holds the name", "group", g.group, "receiver", g.d.r.cfg.Name, "detail", err)
			}
			deadline, pause = ctx, 500*time.Millisecond
		}
		select {
		case <-deadline.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

func isCode(err error, code string) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == code
}

// reregisterEvery is how often a group that refused the name, or does not
// hold the source yet, is asked again.
const reregisterEvery = 3 * time.Second

// run records the receiver's position with the group every AckInterval
// when it moved, and at least every KeepAliveInterval as a keep-alive,
// registering again whenever the group lost the registration.
func (g *ackGroup) run() {
	d := g.d
	cfg := d.r.cfg
	tick := time.NewTicker(cfg.AckInterval)
	defer tick.Stop()
	var sent time.Time
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
		if (!g.registered || !g.known) && time.Since(g.regAt) >= reregisterEvery {
			g.regAt = time.Now()
			if _, err := g.registerOnce(d.ctx); err != nil {
				if isCode(err, wire.CodeBusy) && !g.warned {
					g.warned = true
					if g.everRegistered {
						d.r.log.Error("another receiver took this receiver's name over in a group: this one was expired (silent for the stores' receiver-activity-timeout); its position is no longer recorded there", "group", g.group, "receiver", cfg.Name)
					} else {
						d.r.log.Warn("waiting: a group holds this receiver's name for another session (an earlier incarnation not yet expired, or another receiver); registering there once it frees the name", "group", g.group, "receiver", cfg.Name, "detail", err)
					}
				}
				continue
			}
		}
		if !g.registered {
			continue
		}
		pos := d.acknowledged()
		if pos <= g.recorded && time.Since(sent) < cfg.KeepAliveInterval {
			continue
		}
		sent = time.Now()
		g.send(d.ctx, pos, false)
	}
}

// send records pos with the group (or keeps the registration alive), and
// reports whether the group took it.
func (g *ackGroup) send(ctx context.Context, pos uint64, leaving bool) bool {
	cfg := g.d.r.cfg
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := g.client.Call(cctx, &wire.ConsumedAs{Source: cfg.Source, Receiver: cfg.Name, Session: g.d.session, Seq: pos, Leaving: leaving})
	switch {
	case err == nil:
		g.recorded = max(g.recorded, pos)
		return true
	case isCode(err, wire.CodeNotRegistered), isCode(err, wire.CodeBusy):
		g.registered = false
		g.regAt = time.Time{}
		g.d.r.log.Info("a group lost this receiver's registration; registering again", "group", g.group, "receiver", cfg.Name, "detail", err)
	default:
		g.d.r.log.Debug("recording the receiver's position failed; retrying", "group", g.group, "receiver", cfg.Name, "err", err)
	}
	return false
}

// farewellTimeout bounds a group's farewell: registering again if the
// group lost the registration, then the last position.
const farewellTimeout = 2 * callTimeout

// farewell records the last position and frees the name. A group that
// lost the registration (a new leader, which knows no live session yet)
// is registered with again first, so that Close records the position
// with every group it can reach, not only those whose leader did not
// change; a group that says another receiver holds the name is left alone.
func (g *ackGroup) farewell() Farewell {
	f := Farewell{Group: g.group}
	ctx, cancel := context.WithTimeout(context.Background(), farewellTimeout)
	defer cancel()
	for try := 0; try < 2 && ctx.Err() == nil; try++ {
		if !g.registered {
			if _, err := g.registerOnce(ctx); err != nil {
				// Unreachable now, or the name is another session's.
				f.HeldByAnother, f.Err = isCode(err, wire.CodeBusy), err.Error()
				return f
			}
		}
		if g.send(ctx, g.d.acknowledged(), true) {
			f.Recorded = true
			return f
		}
	}
	f.Err = "the group did not take the last position within " + farewellTimeout.String()
	if g.lastErr != nil {
		f.Err += ": " + g.lastErr.Error()
	}
	return f
}
