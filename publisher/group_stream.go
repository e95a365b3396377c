package publisher

import (
	"errors"
	"fmt"
	"time"

	"umstore/wire"
)

// groupStream is one connection's stream to a group (group.stream): where
// it stands in the publisher's retained messages, the silence bound it
// holds the group to, and the probe of the other members while the leader
// is silent. It belongs to the group's goroutine.
type groupStream struct {
	g       *group
	c       wire.FrameConn
	readErr chan error // the reader goroutine's end (readAcks)

	next      uint64 // the next sequence number to send
	reqID     uint64
	payloads  [][]byte // the frame being built (reused)
	checksums []uint32
	declared  bool // a frame on this connection carried the skipped range (unused.go)

	bound   time.Duration // how long the group may stay silent on this connection
	base    time.Duration // the base bound, Config.AckTimeout
	started time.Time

	liveness  <-chan time.Time // checks the group's silence: a ticker, or the shared connections' sweeper
	keepAlive <-chan time.Time // sends KeepAlive while idle

	// Once the bound has grown past AckTimeout (this leader was slow
	// before), a silence longer than AckTimeout is put to the other
	// members (groupclient.LeaderElsewhere): one that leads now means the
	// silent leader is gone, and the publisher goes there at once instead
	// of waiting out the grown bound.
	elsewhere chan string
	probing   bool
	probedAt  time.Time
}

// stream sends the group everything it has not confirmed, then new messages
// as they come, while a reader goroutine handles acknowledgements. It
// returns when the connection fails or the publisher closes.
func (g *group) stream(c wire.FrameConn) error {
	p := g.p
	select {
	case <-p.decided:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	s := &groupStream{g: g, c: c, readErr: make(chan error, 1)}
	go func() { s.readErr <- g.readAcks(c) }()

	s.next = g.resumeAt()
	s.reqID = 1
	// payloads and checksums grow to the frames this source sends: a
	// MaxBatch each up front cost 10,000 quiet sources 280 MB.
	keepAlive := time.NewTicker(p.cfg.KeepAliveInterval)
	defer keepAlive.Stop()
	s.bound = g.wait.current
	s.base = g.wait.base
	// Checked at a quarter of the base bound even when the bound has grown:
	// the other members are asked after a base bound of silence (probe).
	// On a shared connection the process's sweeper does the waiting.
	if shared, ok := c.(interface{ Heard() time.Time }); ok && p.cfg.Connections != nil {
		wake, done := p.cfg.Connections.sweeper.add(g, shared.Heard, s.bound, s.base)
		defer done()
		s.liveness = wake
	} else {
		liveness := time.NewTicker(s.base / 4)
		defer liveness.Stop()
		s.liveness = liveness.C
	}
	s.keepAlive = keepAlive.C
	s.started = time.Now()
	g.mu.Lock()
	g.lastHeard, g.pingSent = s.started, time.Time{}
	g.mu.Unlock()
	s.elsewhere = make(chan string, 1)
	for {
		first := s.nextFrame()
		if len(s.payloads) == 0 {
			if err := s.idle(); err != nil {
				return err
			}
			continue
		}
		if err := s.send(first); err != nil {
			return err
		}
	}
}

// resumeAt is where a new connection's stream starts: after what the group
// confirmed, or at the first message still retained. A reconnection that
// sends messages again counts them as resends.
func (g *group) resumeAt() uint64 {
	p := g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	next := max(p.tracker.Confirmed(g.index)+1, p.retained.first)
	if g.sessions > 1 && next < p.nextSeq {
		p.stats.Resends += p.nextSeq - next
		p.stats.Reconnects++
	}
	return next
}

// nextFrame fills payloads and checksums with the retained messages from
// next on, as many as one Publish frame takes (Config.MaxBatch,
// MaxBatchBytes, fitsFrame), and returns the first one's sequence number.
func (s *groupStream) nextFrame() (first uint64) {
	p := s.g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.next < p.retained.first {
		s.next = p.retained.first // released while we were away: the group will have a gap
	}
	first = s.next
	size := 0
	s.payloads, s.checksums = s.payloads[:0], s.checksums[:0]
	for len(s.payloads) < p.cfg.MaxBatch && size < p.cfg.MaxBatchBytes {
		b, crc, ok := p.retained.get(s.next)
		if !ok || !fitsFrame(len(s.payloads), size, len(b)) {
			break
		}
		s.payloads = append(s.payloads, b)
		s.checksums = append(s.checksums, crc)
		size += len(b)
		s.next++
	}
	return first
}

// idle, with nothing to send, flushes and waits for whichever comes first:
// new messages, the reader's end, the publisher's close, a probe's answer,
// a liveness check (which may ping the leader) or a keep-alive. It returns
// the error that ends the stream, nil to go on.
func (s *groupStream) idle() error {
	g, c, p := s.g, s.c, s.g.p
	_ = c.SetWriteDeadline(time.Now().Add(s.bound))
	if err := c.Flush(); err != nil {
		return err
	}
	select {
	case <-g.wake:
	case err := <-s.readErr:
		return err
	case <-p.ctx.Done():
		return p.ctx.Err()
	case a := <-s.elsewhere:
		if err := s.moved(a); err != nil {
			return err
		}
	case <-s.liveness:
		g.wait.healthy(time.Since(s.started))
		stalled, ping, awaiting := s.check()
		if stalled {
			return s.silent()
		}
		if awaiting {
			s.probe()
		}
		if ping {
			s.reqID++
			if err := c.Send(&wire.Ping{ReqID: s.reqID}); err != nil {
				return err
			}
		}
	case <-s.keepAlive:
		g.wait.healthy(time.Since(s.started)) // a shared connection's sweeper wakes the liveness check only when quiet
		ka := &wire.KeepAlive{Source: p.cfg.Source, Session: p.session}
		declaring := !s.declared && p.declareUnusedKept(ka)
		if err := c.Send(ka); err != nil {
			return err
		}
		s.declared = s.declared || declaring
	}
	return nil
}

// send writes the frame nextFrame built, which starts at first, flushing
// when much is buffered, and then looks, without waiting, at the reader's
// end, a probe's answer and the liveness check. It returns the error that
// ends the stream, nil to go on.
func (s *groupStream) send(first uint64) error {
	g, c, p := s.g, s.c, s.g.p
	s.reqID++
	pub := &wire.Publish{ReqID: s.reqID, Source: p.cfg.Source, FirstSeq: first, Payloads: s.payloads, Checksums: s.checksums}
	declaring := !s.declared && p.declareUnused(pub)
	if err := c.Write(pub); err != nil {
		return err
	}
	s.declared = s.declared || declaring
	if c.Buffered() > 256<<10 {
		// A frozen leader stops reading: do not block on it for ever.
		_ = c.SetWriteDeadline(time.Now().Add(s.bound))
		if err := c.Flush(); err != nil {
			return err
		}
	}
	select {
	case err := <-s.readErr:
		return err
	case a := <-s.elsewhere:
		if err := s.moved(a); err != nil {
			return err
		}
	case <-s.liveness:
		g.wait.healthy(time.Since(s.started))
		stalled, _, awaiting := s.check()
		if stalled {
			return s.silent()
		}
		if awaiting {
			s.probe()
		}
	default:
	}
	return nil
}

// check reports whether sent messages, or a Ping, have waited too long
// for an answer (stalled): the leader is paused or cut off behind a live
// socket. ping says whether to ask the leader for a sign of life: it has
// been quiet for half of the bound and no Ping is out (check records the
// Ping as sent). awaiting says whether anything is out: messages or a
// Ping.
func (s *groupStream) check() (stalled, ping, awaiting bool) {
	g, p := s.g, s.g.p
	p.mu.Lock()
	waiting := s.next-1 > p.tracker.Confirmed(g.index)
	p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	quiet := s.quiet(g.lastHeard)
	awaiting = waiting || !g.pingSent.IsZero()
	stalled = awaiting && quiet > s.bound
	ping = !g.noPing && g.pingSent.IsZero() && quiet >= s.bound/2
	if ping {
		g.pingSent = time.Now()
	}
	return stalled, ping, awaiting
}

// sharedLiveness is how long a source that heard nothing itself takes a
// shared connection's answers to other sources as proof that the leader
// is alive: past it, its own silence counts (a leader that serves others
// but has lost this source's frames).
const sharedLiveness = 30 * time.Second

// quiet is how long the group has been silent for this stream: since
// lastHeard, this source's last answer, or, on a connection shared with
// other sources (connmux), since the store last answered any of them, as
// long as this source's own silence is under sharedLiveness. A thousand
// sources on one connection wait for one another's answers in the store
// (its window of proposals per connection); each alone would take the
// wait for a stall, reconnect and send everything again.
func (s *groupStream) quiet(lastHeard time.Time) time.Duration {
	var heard func() time.Time
	if shared, ok := s.c.(interface{ Heard() time.Time }); ok {
		heard = shared.Heard
	}
	return quietFor(time.Now(), lastHeard, heard)
}

// silent ends a stream whose group answered nothing within the bound: the
// bound grows for this leader, and the group finds its leader again.
func (s *groupStream) silent() error {
	s.g.wait.stalled(s.g.client.Leader())
	return fmt.Errorf("group %d answered nothing for %v: finding its leader again: %w", s.g.index+1, s.bound, errNotServing)
}

// probe asks the other members, in the background, whether one of them
// leads now, once the bound has grown and the leader has been silent for
// a base bound (again every reprobeEvery); the answer comes on elsewhere.
func (s *groupStream) probe() {
	g := s.g
	g.mu.Lock()
	quiet := s.quiet(g.lastHeard)
	g.mu.Unlock()
	if s.probing || s.bound <= s.base || quiet < s.base || time.Since(s.probedAt) < reprobeEvery(quiet, s.base) {
		return
	}
	leader := g.client.Leader()
	if leader == "" {
		return // asking every store would ask the silent leader too, which may only be slow
	}
	s.probing, s.probedAt = true, time.Now()
	base, elsewhere := s.base, s.elsewhere
	go func() {
		a, _ := g.client.LeaderElsewhere(g.p.ctx, leader, base)
		elsewhere <- a
	}()
}

// moved handles a probe's answer: addr is the member that leads now, ""
// when none does (the leader is slow: keep waiting). A new leader ends the
// stream, to reconnect there.
func (s *groupStream) moved(addr string) error {
	s.probing = false
	if addr == "" {
		return nil // no other member leads: the leader is slow, keep waiting
	}
	s.g.wait.leaderGone()
	s.g.client.Redirected(&wire.NotLeader{Leader: addr})
	return fmt.Errorf("group %d's leader was silent and %s leads now: reconnecting there: %w", s.g.index+1, addr, errNotServing)
}

// errNotServing ends a stream whose store no longer serves the group: it
// was silent past the bound, or another store leads. On a shared
// connection (Connections) the store is given up for every publisher.
var errNotServing = errors.New("the store does not serve the group now")

// fitsFrame reports whether a payload of n bytes may join a Publish frame
// that holds count payloads of size bytes: the frame must stay within what
// a store reads (one payload of wire.MaxPayload always fits alone). Each
// payload costs its bytes, up to 5 bytes of framing and up to 5 bytes of
// checksum.
func fitsFrame(count, size, n int) bool {
	return count == 0 || size+n+perPayloadOverhead*(count+1) <= wire.MaxPayload
}

// perPayloadOverhead is what a payload adds to a Publish frame besides its
// bytes: a bin header (up to 5 bytes) and its checksum (up to 5).
const perPayloadOverhead = 10

// readAcks handles the group's replies until the connection fails or the
// store redirects (leadership moved).
func (g *group) readAcks(c wire.FrameConn) error {
	defer c.Close()
	for {
		m, err := c.Read()
		if err != nil {
			if wire.IsFatal(err) {
				return err
			}
			g.p.log.Warn("unreadable reply from store; ignoring it", "group", g.index+1, "err", err)
			continue
		}
		switch m := m.(type) {
		case *wire.Ack:
			g.heard()
			if m.Conflicts > 0 {
				g.p.conflict(g.index, m)
			}
			g.p.confirmed(g.index, m.FirstSeq, m.LastSeq)
		case *wire.Nak:
			g.heard()
			g.p.naked(g.index, m)
		case *wire.Delivery:
			g.p.delivery(m)
		case *wire.HeldBack:
			g.heard() // the leader is alive: it holds the messages back on purpose
			g.p.heldBack(g.index, m)
		case *wire.Pong:
			g.heard()
			if !m.Leading {
				g.client.Redirected(&wire.NotLeader{Leader: m.Leader, LeaderName: m.LeaderName})
				return fmt.Errorf("the store no longer leads group %d (leader now %q): %w", g.index+1, m.LeaderName, errNotServing)
			}
		case *wire.NotLeader:
			g.client.Redirected(m)
			return fmt.Errorf("leadership moved to %q: %w", m.LeaderName, errNotServing)
		case *wire.Error:
			if m.Code == wire.CodeChecksum {
				g.damagedFrame(m)
			}
			if m.Code == wire.CodeUnknown && m.ReqID == 0 {
				// An older store that does not know Ping: stop pinging it.
				g.mu.Lock()
				g.noPing, g.pingSent = true, time.Time{}
				g.mu.Unlock()
				continue
			}
			return fmt.Errorf("group %d: %w", g.index+1, m)
		}
	}
}

// damagedFrame records a store's refusal of a Publish frame whose payload
// no longer matched the checksum Send computed: nothing of it was stored,
// and the connection starts over, sending it again. Damage on the way is
// gone on the next try; a payload the application changed after Send is
// refused every time.
func (g *group) damagedFrame(e *wire.Error) {
	g.p.mu.Lock()
	g.p.stats.DamagedFrames++
	g.p.mu.Unlock()
	g.p.log.Warn("a store refused a Publish frame: a payload does not match the checksum computed by Send (damaged on its way, or changed after Send, which the publisher forbids); sending it again",
		"group", g.index+1, "detail", e.Message)
}

// heard records an answer from the group on the current connection.
func (g *group) heard() {
	g.mu.Lock()
	g.lastHeard, g.pingSent = time.Now(), time.Time{}
	g.mu.Unlock()
}
