package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"umstore/placement"
	"umstore/wire"
)

// What the stranger tries on the client port against what other clients
// own, at the leader of st's group: neither act can touch what the real
// publishers and receivers hold, whatever the stores answer.
//
//   - The last epoch: a Register of each real source with a session of the
//     stranger's own identity naming epoch 2^64-1. The stores refuse any
//     epoch more than 10 minutes ahead of their clock before they look at
//     who holds the source; should one take it (the source between two
//     incarnations of its publisher), the stranger says goodbye at once.
//   - A receiver spoof: the stranger registers a receiver name of its own
//     (never paced) with each real source, and from another connection
//     sends an anonymous Consumed for it. Only the session that registered
//     a name records its consumption, so the stores refuse it.
//
// Either accepted is a forgery the checker reports (checkStranger).

// strangerReceiver is the receiver name the stranger registers.
const strangerReceiver = strangerSourcePrefix + "-receiver"

// lastEpochSession is a session of the stranger's identity at the last
// epoch.
const lastEpochSession = strangerSourcePrefix + "#18446744073709551615"

// lastEpochs registers every real source with the last epoch at st's
// group's leader; each round, as a source may be free for a moment
// between two incarnations of its publisher.
func (s *stranger) lastEpochs(st placement.StoreRef) {
	for _, real := range sortedSources(s.cfg.Highs) {
		s.lastEpoch(st, real)
	}
}

// receiverSpoofs spoofs the stranger's receiver of every real source at
// st's group's leader; in the first round only, as each costs its group a
// registration and a goodbye in the log.
func (s *stranger) receiverSpoofs(st placement.StoreRef) {
	for _, real := range sortedSources(s.cfg.Highs) {
		s.receiverSpoof(st, real)
	}
}

// lastEpoch registers source with the last epoch.
func (s *stranger) lastEpoch(st placement.StoreRef, source string) {
	const act = "Register with the last epoch"
	c, addr, m, err := s.leaderCall(st, &wire.Register{ReqID: 1, Source: source, Session: lastEpochSession})
	if err != nil {
		s.report(st, "client", act, false, "source %s: %v", source, err)
		return
	}
	defer c.Close()
	switch m := m.(type) {
	case *wire.Registered:
		_ = c.Send(&wire.KeepAlive{Source: source, Session: lastEpochSession, Leaving: true})
		s.report(st, "client", act, true, "source %s at %s: registered at %d", source, addr, m.HighSeq)
	case *wire.Error:
		s.report(st, "client", act, false, "source %s at %s: refused (%s) %s", source, addr, m.Code, m.Message)
	default:
		s.report(st, "client", act, false, "source %s at %s: answer %T", source, addr, m)
	}
}

// receiverSpoof registers the stranger's receiver name with source and
// moves its position from another connection, without a session.
func (s *stranger) receiverSpoof(st placement.StoreRef, source string) {
	const act = "an anonymous Consumed of a registered receiver name"
	session := fmt.Sprintf("%s-%d", strangerReceiver, s.rng.Uint64())
	owner, addr, m, err := s.leaderCall(st, &wire.RegisterReceiver{ReqID: 1, Source: source, Receiver: strangerReceiver, Session: session})
	if err != nil {
		s.report(st, "client", act, false, "source %s: register: %v", source, err)
		return
	}
	defer owner.Close()
	defer func() {
		_ = owner.Send(&wire.ConsumedAs{ReqID: 3, Source: source, Receiver: strangerReceiver, Session: session, Leaving: true})
		_, _ = owner.Read()
	}()
	if reg, ok := m.(*wire.ReceiverRegistered); !ok || !reg.Known {
		s.report(st, "client", act, false, "source %s at %s: registration answered %T (the group may not hold the source yet)", source, addr, m)
		return
	}
	c, err := s.dialClient(addr)
	if err != nil {
		s.report(st, "client", act, false, "source %s at %s: %v", source, addr, err)
		return
	}
	defer c.Close()
	seq := s.cfg.Highs[source] + 1
	err = c.Send(&wire.Consumed{ReqID: 2, Source: source, Receiver: strangerReceiver, Seq: seq})
	if err == nil {
		m, err = c.Read()
	}
	switch m := m.(type) {
	case *wire.OK:
		s.report(st, "client", act, true, "source %s at %s: receiver %s moved to %d", source, addr, strangerReceiver, seq)
	case *wire.Error:
		s.report(st, "client", act, false, "source %s at %s: refused (%s) %s", source, addr, m.Code, m.Message)
	default:
		s.report(st, "client", act, false, "source %s at %s: answer %T, %v", source, addr, m, err)
	}
}

// dialClient opens a client connection from the stranger's address, with
// a deadline for everything on it.
func (s *stranger) dialClient(addr string) (*wire.Conn, error) {
	dialer := &wire.Dialer{Client: "chaos stranger", LocalIP: net.ParseIP(strangerAddr), Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, _, err := dialer.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
	return c, nil
}

// leaderCall sends m to st, or to the leader st names instead, and
// returns the connection it was answered on (open, for what follows), its
// address and the answer.
func (s *stranger) leaderCall(st placement.StoreRef, m wire.Message) (*wire.Conn, string, wire.Message, error) {
	addr := st.ClientAddr()
	for hop := 0; ; hop++ {
		c, err := s.dialClient(addr)
		if err != nil {
			return nil, addr, nil, err
		}
		ans, err := func() (wire.Message, error) {
			if err := c.Send(m); err != nil {
				return nil, err
			}
			return c.Read()
		}()
		if err != nil {
			c.Close()
			return nil, addr, nil, err
		}
		if nl, ok := ans.(*wire.NotLeader); ok && nl.Leader != "" && hop == 0 {
			c.Close()
			addr = nl.Leader
			continue
		}
		return c, addr, ans, nil
	}
}
