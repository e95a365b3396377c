package publisher

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"umstore/wire"
)

// registerTimeout bounds one registration round trip (it goes through the
// group's raft log).
const registerTimeout = 10 * time.Second

// group manages the publisher's connection to one store group: find the
// leader, register, stream every message the group has not confirmed, and
// start over on any failure.
type group struct {
	p     *Publisher
	index int // 0-based
	addrs []string
	wake  chan struct{}

	mu         sync.Mutex
	lastAck    time.Time // when the group last acknowledged anything on this connection
	conn       *wire.Conn
	leaderHint string
	sessions   int // registered connections so far
}

func (g *group) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *group) closeConn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn != nil {
		g.conn.Close()
	}
}

// goodbye tells the group's leader this publisher is leaving, so its
// source is free at once rather than after the activity timeout.
func (g *group) goodbye() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return
	}
	_ = g.conn.NetConn().SetWriteDeadline(time.Now().Add(time.Second))
	_ = g.conn.Send(&wire.KeepAlive{Source: g.p.cfg.Source, Session: g.p.cfg.Session, Leaving: true})
}

func (g *group) run() {
	p := g.p
	for p.ctx.Err() == nil {
		c, reg, err := g.connect()
		if err != nil {
			if errors.Is(err, wire.ErrUnauthorized) {
				p.mu.Lock()
				p.authErr = err
				p.broadcastLocked()
				p.mu.Unlock()
			}
			p.log.Debug("store group unreachable", "group", g.index+1, "err", err)
			g.pause()
			continue
		}
		g.mu.Lock()
		g.conn = c
		g.sessions++
		g.mu.Unlock()
		if p.ctx.Err() != nil {
			c.Close()
			return
		}
		g.registered(reg)
		err = g.stream(c)
		c.Close()
		p.mu.Lock()
		p.stats.Connected[g.index] = false
		if p.tracker != nil {
			p.tracker.SetActive(g.index, false)
		}
		p.mu.Unlock()
		if p.ctx.Err() == nil {
			p.log.Info("connection to store group lost; reconnecting", "group", g.index+1, "err", err)
		}
		g.pause()
	}
}

func (g *group) pause() {
	select {
	case <-g.p.ctx.Done():
	case <-time.After(g.p.cfg.ReconnectDelay):
	}
}

// connect finds a store of the group that accepts the registration (the
// leader), following redirects.
func (g *group) connect() (*wire.Conn, *wire.Registered, error) {
	p := g.p
	d := &wire.Dialer{Client: "publisher " + p.cfg.Source, LocalIP: p.cfg.LocalIP, Timeout: 2 * time.Second, TLS: p.cfg.TLS, Token: p.cfg.Token}
	g.mu.Lock()
	order := []string{}
	if g.leaderHint != "" {
		order = append(order, g.leaderHint)
	}
	g.mu.Unlock()
	for _, a := range g.addrs {
		if !slices.Contains(order, a) {
			order = append(order, a)
		}
	}
	var lastErr error
	for hops := 0; len(order) > 0 && hops < 2*len(g.addrs)+2; hops++ {
		addr := order[0]
		order = order[1:]
		c, _, err := d.Dial(p.ctx, addr)
		if err != nil {
			lastErr = err
			if errors.Is(err, wire.ErrUnauthorized) {
				break // every store of the deployment shares the token
			}
			continue
		}
		_ = c.NetConn().SetDeadline(time.Now().Add(registerTimeout))
		err = c.Send(&wire.Register{ReqID: 1, Source: p.cfg.Source, Session: p.cfg.Session})
		var m wire.Message
		if err == nil {
			m, err = c.Read()
		}
		if err != nil {
			c.Close()
			lastErr = err
			continue
		}
		switch m := m.(type) {
		case *wire.Registered:
			_ = c.NetConn().SetDeadline(time.Time{})
			g.mu.Lock()
			g.leaderHint = addr
			g.mu.Unlock()
			return c, m, nil
		case *wire.NotLeader:
			c.Close()
			lastErr = fmt.Errorf("store %s is not the leader", addr)
			if m.Leader != "" && m.Leader != addr {
				order = append([]string{m.Leader}, slices.DeleteFunc(order, func(a string) bool { return a == m.Leader })...)
			}
		case *wire.Error:
			c.Close()
			lastErr = m
			if m.Code == wire.CodeBusy {
				err := fmt.Errorf("%w: %s", ErrSourceBusy, m.Message)
				p.mu.Lock()
				if p.busyErr == nil {
					p.log.Warn("waiting: another live publisher holds the source", "group", g.index+1, "detail", m.Message)
				}
				p.busyErr = err
				p.broadcastLocked()
				p.mu.Unlock()
				return nil, nil, err // the leader answered: no other store will say otherwise
			}
		default:
			c.Close()
			lastErr = fmt.Errorf("%w: registration answered with frame type %d", wire.ErrMalformed, m.Type())
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no store address")
	}
	return nil, nil, fmt.Errorf("group %d: no store accepted the registration: %w", g.index+1, lastErr)
}

// registered records a registration answer.
func (g *group) registered(reg *wire.Registered) {
	p := g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Connected[g.index] = true
	select {
	case <-p.decided:
	default:
		// Before the decision: count the answer once per group.
		for i, a := range p.answers {
			if a.group == g.index {
				p.answers[i].highSeq = max(a.highSeq, reg.HighSeq)
				p.broadcastLocked()
				return
			}
		}
		p.answers = append(p.answers, registration{group: g.index, highSeq: reg.HighSeq, groupID: reg.GroupID})
		p.broadcastLocked()
		return
	}
	p.tracker.SetActive(g.index, true)
	if reg.HighSeq >= p.firstSeq && p.tracker.Confirmed(g.index) < p.firstSeq {
		// This group answered after the resume point was chosen, and holds
		// sequence numbers at or above it that this session never sent it.
		p.stats.LateHigherGroup++
		p.log.Error("a store group that answered late holds sequence numbers beyond the resume point: they may have been reused", "group", g.index+1, "group_high_seq", reg.HighSeq, "resume_seq", p.firstSeq)
	}
	p.broadcastLocked()
}

// stream sends the group everything it has not confirmed, then new messages
// as they come, while a reader goroutine handles acknowledgements. It
// returns when the connection fails or the publisher closes.
func (g *group) stream(c *wire.Conn) error {
	p := g.p
	select {
	case <-p.decided:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	readErr := make(chan error, 1)
	go func() { readErr <- g.readAcks(c) }()

	p.mu.Lock()
	next := max(p.tracker.Confirmed(g.index)+1, p.retained.first)
	if g.sessions > 1 && next < p.nextSeq {
		p.stats.Resends += p.nextSeq - next
		p.stats.Reconnects++
	}
	p.mu.Unlock()

	var reqID uint64 = 1
	payloads := make([][]byte, 0, p.cfg.MaxBatch)
	keepAlive := time.NewTicker(p.cfg.KeepAliveInterval)
	defer keepAlive.Stop()
	g.mu.Lock()
	g.lastAck = time.Now()
	g.mu.Unlock()
	// stalled reports whether sent messages have waited too long for an
	// acknowledgement: the leader is frozen or cut off behind a live socket.
	stalled := func() bool {
		p.mu.Lock()
		waiting := next-1 > p.tracker.Confirmed(g.index)
		p.mu.Unlock()
		g.mu.Lock()
		quiet := time.Since(g.lastAck)
		g.mu.Unlock()
		return waiting && quiet > p.cfg.AckTimeout
	}
	for {
		p.mu.Lock()
		if next < p.retained.first {
			next = p.retained.first // released while we were away: the group will have a gap
		}
		first := next
		size := 0
		payloads = payloads[:0]
		for len(payloads) < p.cfg.MaxBatch && size < p.cfg.MaxBatchBytes {
			b, ok := p.retained.get(next)
			if !ok {
				break
			}
			payloads = append(payloads, b)
			size += len(b)
			next++
		}
		p.mu.Unlock()

		if len(payloads) == 0 {
			_ = c.NetConn().SetWriteDeadline(time.Now().Add(p.cfg.AckTimeout))
			if err := c.Flush(); err != nil {
				return err
			}
			select {
			case <-g.wake:
			case err := <-readErr:
				return err
			case <-p.ctx.Done():
				return p.ctx.Err()
			case <-keepAlive.C:
				if stalled() {
					return fmt.Errorf("group %d acknowledged nothing for %v: finding its leader again", g.index+1, p.cfg.AckTimeout)
				}
				if err := c.Send(&wire.KeepAlive{Source: p.cfg.Source, Session: p.cfg.Session}); err != nil {
					return err
				}
			}
			continue
		}
		reqID++
		if err := c.Write(&wire.Publish{ReqID: reqID, Source: p.cfg.Source, FirstSeq: first, Payloads: payloads}); err != nil {
			return err
		}
		if c.Buffered() > 256<<10 {
			// A frozen leader stops reading: do not block on it for ever.
			_ = c.NetConn().SetWriteDeadline(time.Now().Add(p.cfg.AckTimeout))
			if err := c.Flush(); err != nil {
				return err
			}
		}
		select {
		case err := <-readErr:
			return err
		default:
		}
	}
}

// readAcks handles the group's replies until the connection fails or the
// store redirects (leadership moved).
func (g *group) readAcks(c *wire.Conn) error {
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
			g.mu.Lock()
			g.lastAck = time.Now()
			g.mu.Unlock()
			if m.Conflicts > 0 {
				g.p.conflict(g.index, m)
			}
			g.p.confirmed(g.index, m.FirstSeq, m.LastSeq)
		case *wire.NotLeader:
			g.mu.Lock()
			g.leaderHint = m.Leader
			g.mu.Unlock()
			return fmt.Errorf("leadership moved to %q", m.LeaderName)
		case *wire.Error:
			return fmt.Errorf("group %d: %w", g.index+1, m)
		}
	}
}
