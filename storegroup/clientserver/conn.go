package clientserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"umstore/internal/clientperm"
	"umstore/quorum"
	"umstore/wire"
)

// handle serves one connection: a reader that turns requests into raft
// proposals or immediate answers, and a writer that answers in request
// order, flushing whenever it has caught up (writeReplies). Publish frames
// go to the Publish half (publish.go); every other request to dispatch.
// Until its first request a connection holds only its read buffer and this
// goroutine, so idle connections cost little; frames are read within the
// time bounds of Limits (frameReader).
func (cs *Server) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	cs.Metrics.Connections.Add(1)
	defer cs.Metrics.Connections.Add(-1)
	c := wire.NewConn(nc, cs.MaxFrame)
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	var who *clientperm.Identity
	admit := func(h *wire.Hello) (refusal string) {
		if cs.Identities == nil {
			if cs.Token != "" && subtle.ConstantTimeCompare([]byte(h.Token), []byte(cs.Token)) != 1 {
				return "this deployment requires a token: give the client the deployment's token file"
			}
			return ""
		}
		who, refusal = cs.identify(nc, h) // permissions.go
		return refusal
	}
	if _, err := wire.ServerHandshakeWith(c, wire.Welcome{Store: cs.Name, Group: cs.Group}, admit); err != nil {
		if errors.Is(err, wire.ErrUnauthorized) {
			cs.Metrics.refused(refusedUnauthorized)
			cs.Log.Warn("refused a client that is none the deployment admits", "remote", nc.RemoteAddr(), "err", err)
		} else {
			cs.Log.Debug("client handshake failed", "remote", nc.RemoteAddr(), "err", err)
		}
		return
	}
	_ = nc.SetDeadline(time.Time{})
	rd := &frameReader{c: c, idle: cs.Limits.IdleTimeout, frame: cs.Limits.FrameTimeout, last: time.Now()}
	m, err := rd.read()
	if err != nil && wire.IsFatal(err) && !errors.Is(err, wire.ErrFrameTooLarge) {
		cs.closing(nc, err) // gone, silent or too slow: nothing to answer
		return
	}
	rd.handedOver()
	cs.serveConn(ctx, nc, rd, who, frame{m: m, err: err})
}

// serveConn serves a handshaken connection from its first frame on.
// who is the connection's client identity (nil: may do everything).
func (cs *Server) serveConn(ctx context.Context, nc net.Conn, rd *frameReader, who *clientperm.Identity, first frame) {
	c := rd.c
	replies := newReplyQueue(pendingReplies)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		cs.writeReplies(c, replies)
	}()
	conn := &connState{sessions: map[string]string{}, who: who}
	connCtx, cancel := context.WithCancel(ctx)
	var subs sync.WaitGroup
	defer func() {
		cs.registered.give(len(conn.sessions)) // the connection's registrations end with it
		cs.receivers.give(len(conn.receivers))
		cancel()
		replies.close()
		<-writerDone // answers owed are flushed first
		nc.Close()   // unblocks subscriptions stuck writing
		subs.Wait()
	}()
	frames := make(chan frame, readAhead)
	go readFrames(connCtx, rd, frames)
	slots := newWindow()
	next := &first // read but not yet handled
	for {
		var f frame
		if next != nil {
			f, next = *next, nil
		} else {
			var open bool
			if f, open = <-frames; !open {
				return // the reader stopped: the store is closing
			}
		}
		m, err := f.m, f.err
		if err != nil {
			if cs.badFrame(nc, err, replies) {
				return
			}
			continue
		}
		if e := cs.forbidden(m, conn.who); e != nil {
			cs.Metrics.refused(refusedForbidden)
			replies.put(reply{msg: e})
			continue
		}
		switch m := m.(type) {
		case *wire.Publish:
			var ok bool
			if next, ok = cs.publish(connCtx, m, f.at, frames, conn, slots, replies); !ok {
				return
			}
		case *wire.Shutdown:
			replies.put(cs.shutdown(m, nc))
		case *wire.MemberMove:
			replies.put(cs.memberMove(connCtx, m, nc, conn)) // ops.go
		case *wire.Subscribe:
			cs.startSubscription(connCtx, rd, m, &subs, replies)
		case *wire.KeepAlive:
			cs.keepAlive(m, conn)
		case *wire.Backup:
			cs.backup(m, nc, rd, conn.who, replies) // backup.go
		case *wire.RegisterSource:
			cs.registerSource(connCtx, c, m, conn, &subs, replies)
		default:
			replies.put(cs.dispatch(connCtx, m, conn))
		}
	}
}

// badFrame answers a frame that could not be read, and reports whether
// the connection must close (the error is fatal: gone, silent, too slow,
// or a frame too large to skip).
func (cs *Server) badFrame(nc net.Conn, err error, replies *replyQueue) (closing bool) {
	if errors.Is(err, wire.ErrFrameTooLarge) {
		cs.Metrics.refused(refusedTooLarge)
		replies.put(reply{msg: &wire.Error{Code: wire.CodeTooLarge, Message: err.Error() + "; closing the connection"}})
	}
	if wire.IsFatal(err) {
		cs.closing(nc, err)
		return true
	}
	code, reason := wire.CodeBadRequest, refusedMalformed
	if errors.Is(err, wire.ErrUnknownType) {
		code, reason = wire.CodeUnknown, refusedUnknownType
	}
	cs.Metrics.refused(reason)
	replies.put(reply{msg: &wire.Error{Code: code, Message: err.Error()}})
	return false
}

// frame is one read from a client connection: a message or the error that
// ended or spoiled the read.
type frame struct {
	m   wire.Message
	err error
	at  time.Time // when it was read (stagetime.Queued and Total start here)
}

// readFrames decodes frames from rd until a fatal error, which it delivers
// last. It stops early when ctx ends. It closes out when it returns.
func readFrames(ctx context.Context, rd *frameReader, out chan<- frame) {
	defer close(out)
	for {
		m, err := rd.read()
		select {
		case out <- frame{m: m, err: err, at: time.Now()}:
		case <-ctx.Done():
			return
		}
		if err != nil && wire.IsFatal(err) {
			return
		}
		rd.handedOver()
	}
}

// connState is what the server remembers about one client connection.
type connState struct {
	// who is the client's identity, named at its Hello (nil: the
	// deployment's own, or a store without identities: everything).
	who *clientperm.Identity
	// sessions maps a source to the session that registered it on this
	// connection: only then may the connection publish it (publish.go) and
	// speak for that session (keepAlive). Each entry counts against
	// MaxSourcesPerConn and MaxSources (claimSource); a goodbye and the
	// connection's end give them back.
	sessions map[string]string
	// receivers maps a receiver name registered on this connection to the
	// session that registered it, against MaxReceiversPerConn
	// and MaxReceivers (registerReceiver); the receiver's goodbye removes
	// it.
	receivers map[receiverName]string
	// delivery: the sources whose receivers' positions are pushed on this
	// connection (receivers.go).
	delivery map[string]bool
	// move: the MemberMove in progress, as the member desk left it.
	move any
	// intragroup: the intragroup behaviour each source registered on this
	// connection gets (intragroup.go).
	intragroup map[string]quorum.Intragroup
	// published: the highest sequence number of each source this
	// connection proposed, so that a Publish continuing it is let through
	// without reading the repository (seqjump.go).
	published map[string]uint64
}

// frameReader reads one client connection's frames within the store's
// time bounds (Limits): a frame must begin within IdleTimeout of the
// previous one, unless a subscription runs on the connection, and arrive
// whole within FrameTimeout once begun. Only the connection's reader calls
// read; subscriptions is changed by the subscription goroutines.
type frameReader struct {
	c           *wire.Conn
	idle, frame time.Duration
	last        time.Time    // when the previous frame was handed over
	subscribed  atomic.Int32 // subscriptions running on the connection
}

// read returns the next frame, or the error that ends the connection
// (wrapping wire.ErrIdle or wire.ErrSlowFrame when a bound was met).
// While a subscription runs an idle deadline only re-arms, so a
// connection whose subscription has ended is closed within one more idle
// period.
func (r *frameReader) read() (wire.Message, error) {
	for {
		m, err := r.c.ReadTimed(r.last.Add(r.idle), r.frame)
		if errors.Is(err, wire.ErrIdle) && r.subscribed.Load() > 0 {
			r.last = time.Now()
			continue
		}
		return m, err
	}
}

// handedOver records that the frame just read was taken by the dispatcher:
// the idle bound counts from now.
func (r *frameReader) handedOver() { r.last = time.Now() }

// closing counts and logs a connection the store closes because it met a
// time bound; other read errors (the client closed) are not counted.
func (cs *Server) closing(nc net.Conn, err error) {
	switch {
	case errors.Is(err, wire.ErrIdle):
		cs.Metrics.ClosedConns[connClosedIdle].Add(1)
		cs.Log.Debug("closing an idle client connection", "remote", nc.RemoteAddr(), "idle_timeout", cs.Limits.IdleTimeout)
	case errors.Is(err, wire.ErrSlowFrame):
		cs.Metrics.ClosedConns[connClosedSlowFrame].Add(1)
		if dropped, ok := cs.slowLog.Allow(time.Now()); ok {
			cs.Log.Warn("closing a client connection whose frame did not arrive in time", "remote", nc.RemoteAddr(),
				"frame_timeout", cs.Limits.FrameTimeout, "closed_since_last_warning", dropped)
		}
	}
}
