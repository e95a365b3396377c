package receiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

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
// a group that says the name is busy until ctx ends; a group that forbids
// this client the name or the source is not asked again.
func (g *ackGroup) registerUntil(ctx, wait context.Context) (*wire.ReceiverRegistered, error) {
	for {
		rep, err := g.registerOnce(ctx)
		if err == nil {
			return rep, nil
		}
		g.lastErr = err
		if isCode(err, wire.CodeForbidden) {
			return nil, err
		}
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

// unreachable is the error of a read no group answered, lastErr the last
// group's: ErrForbidden when the stores refused this client the source,
// else ErrUnreachable.
func unreachable(lastErr error) error {
	if isCode(lastErr, wire.CodeForbidden) {
		return fmt.Errorf("%w: %w", ErrForbidden, lastErr)
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, lastErr)
}
