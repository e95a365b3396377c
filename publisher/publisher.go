package publisher

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"umstore/internal/groupclient"
	"umstore/quorum"
	"umstore/wire"
)

// Publisher publishes the messages of one source to every store group.
// Its methods are safe for concurrent use.
type Publisher struct {
	cfg Config
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	decided  chan struct{} // closed once the resume point is known
	firstSeq uint64        // first sequence number of this session
	nextSeq  uint64        // next sequence number Send assigns
	tracker  *quorum.Tracker
	retained retention
	changed  chan struct{} // closed and replaced whenever stability or confirmations change
	closed   bool
	groups   []*group
	replies  []groupReply // what the groups told the registration, until the decision
	stats    Stats

	// settledBefore: the state file was settled when New read it;
	// resumedPastAll: the resume point is past everything any incarnation
	// sent before (stateFile.Settled says what these decide).
	settledBefore, resumedPastAll bool

	stableSignal chan struct{} // wakes the event goroutine
	delivered    uint64        // highest sequence number OnStable has been called for
	state        *stateFile    // nil without Config.StateFile
	stateWrite   sync.Mutex    // held across each write of the state file, so writes never go back
	busyWarned   bool          // the "another live publisher holds the source" warning was given
	reg          Registration

	// reserved is the state file's SentUpTo as on disk: Send hands the
	// groups nothing above it (reserve.go). reserving: a write extending
	// it runs; reserveErr: the last one failed, for Send to report.
	reserved   uint64
	reserving  bool
	reserveErr error
	sentBefore uint64 // SentUpTo as New read it: the earlier incarnations' bound

	// The numbers skipped past the state file's bound (unused.go): pending
	// while the groups in unusedWaiting have not said what they hold; once
	// they have, unusedDeclared is what each connection declares.
	unusedPending  wire.Range
	unusedWaiting  map[int]bool
	unusedChecking map[int]bool // groups asked what they hold of it (checkUnusedHeld)
	unusedDeclared atomic.Pointer[wire.Range]
	dialer         *wire.Dialer // the groups' dialer, for such a question

	flight      flight        // the unstable messages: flight size, byte limit, lifetime (flight.go)
	events      []any         // events waiting for the event goroutine (events.go)
	eventSignal chan struct{} // wakes the event goroutine
	confirm     confirmations // confirmed delivery (confirm.go)
	fatal       error         // set once the publisher cannot go on (fenced, misconfigured): Send returns it

	identity string // the session identity (incarnation.go)
	// deploymentGroups maps a deployment group index, as its stores say,
	// to this publisher's group index for it (group.go).
	deploymentGroups map[int]int
	session          string // this incarnation's session, "identity#epoch"
}

// Stats counts what a Publisher did.
type Stats struct {
	Sent            uint64   // messages accepted by Send
	Stable          uint64   // highest stable sequence number
	Released        uint64   // messages released from retention after every group confirmed them
	ForcedReleases  uint64   // messages released before every group confirmed them (retention limit)
	Resends         uint64   // messages sent again after a reconnection
	Reconnects      uint64   // connections re-opened to a group
	LateHigherGroup uint64   // groups that answered registration late with a higher sequence than the resume point
	Conflicts       uint64   // sequence numbers a group already held with a different payload (sequence reuse)
	DamagedFrames   uint64   // Publish frames a store refused because a payload did not match its checksum (then sent again)
	Confirmed       []uint64 // per group, the contiguous confirmed watermark
	Connected       []bool   // per group, whether a registered connection is open

	InFlight         int    // unstable messages now
	InFlightBytes    int64  // their payload bytes
	ReportedUnstable uint64 // messages reported to OnUnstable past their stability lifetime
	Lost             uint64 // sequence numbers a group said it lost (stability NAKs)
	// Delivered is the highest sequence number that ConfirmedDelivery
	// distinct receivers have consumed (0 without ConfirmedDelivery).
	Delivered uint64
	// HeldBack counts the notices of a group's leader holding this
	// publisher back (blocking receiver-paced persistence at the limit, or
	// an intragroup behaviour waiting for stores).
	HeldBack uint64
}

// New registers the source with every group and returns a Publisher ready
// to Send. It waits up to RegisterTimeout for every group; after that it
// proceeds once enough groups for the intergroup behaviour have answered,
// or fails with ErrRegistration when ctx ends first. The resume point is one
// past the highest sequence number any answering group holds.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Publisher{
		cfg:          cfg,
		log:          cfg.Logger.With("source", cfg.Source),
		decided:      make(chan struct{}),
		changed:      make(chan struct{}),
		stableSignal: make(chan struct{}, 1),
		eventSignal:  make(chan struct{}, 1),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.StateFile != "" {
		st, err := readStateFile(cfg.StateFile, cfg.Source)
		if err != nil {
			return nil, err
		}
		if st == nil {
			st = &stateFile{Source: cfg.Source}
		}
		if st.Groups == nil {
			st.Groups = map[int]string{}
		}
		if st.Settled {
			// This incarnation may send past LastStable from now on: the
			// file must not say otherwise should it die before its Close.
			p.settledBefore, st.Settled = true, false
			if err := st.write(cfg.StateFile); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
			}
		}
		p.state = st
		p.reserved, p.sentBefore = st.SentUpTo, st.SentUpTo
	}
	session, err := p.incarnation()
	if err != nil {
		return nil, err
	}
	p.session = session
	p.stats.Confirmed = make([]uint64, len(cfg.Groups))
	p.stats.Connected = make([]bool, len(cfg.Groups))
	d := &wire.Dialer{Client: "publisher " + cfg.Source, LocalIP: cfg.LocalIP, Timeout: dialTimeout, TLS: cfg.TLS, Token: cfg.Token}
	if cfg.Connections != nil {
		d.Client = "publishers" // the connection is every source's
	}
	p.dialer = d
	for i, addrs := range cfg.Groups {
		g := &group{p: p, index: i, client: groupclient.New(i+1, addrs, d), wake: make(chan struct{}, 1), wait: newAckWait(cfg.AckTimeout)}
		if cfg.Connections != nil {
			g.client.Pool = cfg.Connections.pool
		}
		p.groups = append(p.groups, g)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); g.run() }()
		if cfg.Connections != nil {
			cfg.Connections.learner.add(g)
		} else {
			p.wg.Add(1)
			go func() { defer p.wg.Done(); g.learn() }()
		}
	}
	if err := p.register(ctx); err != nil {
		p.Close()
		return nil, err
	}
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.deliverStability() }()
	go func() { defer p.wg.Done(); p.runEvents() }()
	if cfg.ConfirmedDelivery > 0 {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.deliverConfirmations() }()
	}
	return p, nil
}

// FirstSeq is the first sequence number of this publishing session.
func (p *Publisher) FirstSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstSeq
}

// Send assigns the next sequence number to payload and hands it to every
// group. It returns once the message is retained, not once it is stable:
// watch OnStable or call Flush. With FlightBlock it waits while the flight
// is full (FlightSize messages, or FlightSizeBytes, unstable); with
// FlightNotify it goes on and reports FlightOver. The publisher keeps
// payload; do not modify it. A
// payload larger than wire.MaxPayload is refused with ErrTooLarge before it
// is given a sequence number; past wire.MaxSeq Send refuses with
// ErrSequenceExhausted. Send computes the payload's CRC32C here, once: every
// group receives it with the payload and refuses a payload that no longer
// matches it, so a payload changed after Send is never stored.
func (p *Publisher) Send(ctx context.Context, payload []byte) (uint64, error) {
	if len(payload) > wire.MaxPayload {
		return 0, fmt.Errorf("%w: %d bytes, the limit is %d (wire.MaxPayload): split the message, or store it elsewhere and publish a reference", ErrTooLarge, len(payload), wire.MaxPayload)
	}
	crc := wire.Checksum(payload)
	p.mu.Lock()
	var full bool
	for {
		if p.closed {
			p.mu.Unlock()
			return 0, ErrClosed
		}
		if p.fatal != nil {
			err := p.fatal
			p.mu.Unlock()
			return 0, err
		}
		if p.nextSeq > wire.MaxSeq {
			p.mu.Unlock()
			return 0, fmt.Errorf("%w: source %q sent sequence number %d, the highest a source may have; publish under a new source name",
				ErrSequenceExhausted, p.cfg.Source, uint64(wire.MaxSeq))
		}
		if p.reserveErr != nil {
			err := p.reserveErr
			p.reserveErr = nil
			p.mu.Unlock()
			return 0, err
		}
		if p.reservedLocked(p.nextSeq) {
			if full = p.flightFullLocked(len(payload)); !full || p.cfg.Flight == FlightNotify {
				break
			}
			if p.cfg.Flight == FlightRefuse {
				p.mu.Unlock()
				return 0, ErrFlightFull
			}
		}
		// Wait until the state file's bound covers the number, or the
		// flight has room.
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		p.mu.Lock()
	}
	seq := p.nextSeq
	p.nextSeq++
	p.retained.push(payload, crc)
	p.flightSentLocked(len(payload), full)
	p.stats.Sent++
	p.mu.Unlock()
	for _, g := range p.groups {
		g.poke()
	}
	return seq, nil
}

// Flush waits until every message sent so far is stable and OnStable has
// been told so.
func (p *Publisher) Flush(ctx context.Context) error {
	return p.waitFor(ctx, func() bool { return p.delivered >= p.nextSeq-1 })
}

// WaitAllGroups waits until every group has confirmed every message sent so
// far: full redundancy, beyond what stability requires.
func (p *Publisher) WaitAllGroups(ctx context.Context) error {
	return p.waitFor(ctx, func() bool {
		for g := range p.groups {
			if p.tracker.Confirmed(g) < p.nextSeq-1 {
				return false
			}
		}
		return true
	})
}

// waitFor waits until cond (called with p.mu held) holds.
func (p *Publisher) waitFor(ctx context.Context, cond func() bool) error {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return ErrClosed
		}
		if p.fatal != nil {
			err := p.fatal
			p.mu.Unlock()
			return err
		}
		ok := cond()
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats returns counters and per-group progress.
func (p *Publisher) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Confirmed = append([]uint64(nil), p.stats.Confirmed...)
	st.Connected = append([]bool(nil), p.stats.Connected...)
	st.Delivered = p.confirm.through
	if p.tracker != nil {
		st.Stable = p.tracker.Stable()
		for g := range p.groups {
			st.Confirmed[g] = p.tracker.Confirmed(g)
		}
		p.settleFlightLocked()
		st.InFlight, st.InFlightBytes = p.flight.len(), p.flight.bytes
	}
	return st
}

// Close stops the publisher and closes its connections. Messages not yet
// stable are abandoned: call Flush first.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.broadcastLocked()
	p.mu.Unlock()
	for _, g := range p.groups {
		g.goodbye()
	}
	p.cancel()
	for _, g := range p.groups {
		g.closeConn()
	}
	p.wg.Wait()
	if p.state != nil {
		p.mu.Lock()
		// Settled only if nothing this incarnation sent is above what it
		// records as stable, and nothing an earlier one sent is either.
		p.state.Settled = p.fatal == nil && p.resumedPastAll && p.tracker != nil && p.nextSeq-1 <= p.delivered
		// Nothing is sent any more: the bound shrinks to what was sent,
		// by this incarnation and (unless its resume point was past
		// everything) by the earlier ones.
		var sent uint64
		if p.tracker != nil {
			sent = p.nextSeq - 1
		}
		if !p.resumedPastAll {
			sent = max(sent, p.sentBefore)
		}
		p.state.SentUpTo = sent
		p.mu.Unlock()
	}
	return p.saveState()
}

// stopped reports whether the publisher cannot go on (failFatally).
func (p *Publisher) stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal != nil
}

// failFatally records that the publisher cannot go on (a later incarnation
// took its source over, or its store list is wrong): Send returns err from
// now on, and New if it has not returned yet. The first such error stands.
func (p *Publisher) failFatally(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fatal != nil || p.closed {
		return
	}
	p.fatal = err
	p.log.Error("the publisher stops", "err", err)
	p.broadcastLocked()
}

// saveState writes the state file, if configured.
func (p *Publisher) saveState() error {
	if p.state == nil {
		return nil
	}
	p.stateWrite.Lock()
	defer p.stateWrite.Unlock()
	p.mu.Lock()
	if p.tracker != nil {
		p.state.LastStable = max(p.state.LastStable, p.delivered)
	}
	st := p.state.copy()
	p.mu.Unlock()
	return st.write(p.cfg.StateFile)
}

// broadcastLocked wakes everyone waiting on p.changed. Caller holds p.mu.
func (p *Publisher) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// confirmed records a group's acknowledgement of first..last.
func (p *Publisher) confirmed(g int, first, last uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracker == nil {
		return
	}
	before := p.tracker.Confirmed(g)
	_, advanced := p.tracker.Confirm(g, quorum.Range{From: first, To: last})
	if after := p.tracker.Confirmed(g); after > before {
		p.queueLocked(GroupStable{Group: g + 1, Store: p.groups[g].client.Leader(), First: before + 1, Last: after})
	}
	p.settleFlightLocked()
	p.releaseLocked()
	p.broadcastLocked()
	if advanced {
		select {
		case p.stableSignal <- struct{}{}:
		default:
		}
	}
}

// conflict records that a group held other payloads for some of the
// acknowledged sequence numbers: this source's sequence numbers were reused.
func (p *Publisher) conflict(g int, a *wire.Ack) {
	p.mu.Lock()
	p.stats.Conflicts += uint64(a.Conflicts)
	p.mu.Unlock()
	p.log.Error("a store group holds different payloads for sequence numbers this publisher sent: they were reused (an earlier publisher on this source got further than this one knew)",
		"group", g+1, "first", a.FirstSeq, "last", a.LastSeq, "conflicts", a.Conflicts)
}

// releaseLocked drops retained messages that are stable and confirmed by
// every group (and, with RetainUntilConfirmed, by enough receivers), and,
// while over the retention limit, the oldest stable ones.
func (p *Publisher) releaseLocked() {
	stable := p.tracker.Stable()
	for p.retained.len() > 0 {
		seq := p.retained.first
		if seq > stable {
			break
		}
		all := !p.cfg.RetainUntilConfirmed || seq <= p.confirm.through // not yet confirmed by enough receivers: kept
		for g := range p.groups {
			if !all || !p.tracker.Has(g, seq) {
				all = false
				break
			}
		}
		if all {
			p.stats.Released++
		} else if p.retained.bytes > p.cfg.RetentionSizeLimit {
			p.stats.ForcedReleases++
		} else {
			break
		}
		p.retained.pop()
	}
	p.tracker.Forget(p.retained.first - 1)
}

// deliverStability calls OnStable in order, from one goroutine, and then
// records what it delivered so Flush can return.
func (p *Publisher) deliverStability() {
	var lastSave time.Time
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.stableSignal:
		}
		p.mu.Lock()
		stable, delivered := p.tracker.Stable(), p.delivered
		p.mu.Unlock()
		if stable <= delivered {
			continue
		}
		if p.cfg.OnStable != nil {
			p.cfg.OnStable(delivered+1, stable)
		}
		p.mu.Lock()
		p.delivered = stable
		p.broadcastLocked()
		p.mu.Unlock()
		if p.state != nil && time.Since(lastSave) >= stateSaveInterval {
			lastSave = time.Now()
			if err := p.saveState(); err != nil {
				p.log.Warn("cannot update the publisher state file", "err", err)
			}
		}
	}
}

// stateSaveInterval bounds how often stability is written to the state file.
const stateSaveInterval = 100 * time.Millisecond
