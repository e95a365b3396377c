package main

import (
	"fmt"
	"strings"

	"umstore/placement"
	"umstore/wire"
)

// Two more things the stranger tries on the client port, with sources of
// its own (named with floodSourcePrefix, not strangerSourcePrefix: a store
// may hold them, they are a client's own):
//
//   - A bounded Register flood: floodRegisters pipelined Registers of
//     unique 255-byte source names on one connection to st's group's
//     leader. Registering is every client's right, so nothing it is
//     answered is a forgery; what the flood must not do is cost the group
//     its leader or its answers to the real publishers, which the
//     checker's liveness and stall rules judge like any fault's.
//   - A sequence jump: one message of a source of its own at 1, then one
//     far past it (more than ClientLimits.MaxSeqJump, 1,048,576, past the
//     highest any group holds). A store that takes the second is a
//     forgery the checker reports (checkStranger): a client could strand
//     its own source at the last number.

// floodSourcePrefix starts the names of the sources the stranger registers
// as a client.
const floodSourcePrefix = "flood"

// floodRegisters is how many Registers one flood pipelines. A flood runs
// once per group and stranger fault (at its first store's round): every
// source it registers stays in the group's repository, and the schedule's
// status samples read every source.
const floodRegisters = 500

// seqJump is how far past its highest the stranger's second Publish goes.
const seqJump = 1<<20 + 1000

// registerFlood floods st's group's leader with Registers.
func (s *stranger) registerFlood(st placement.StoreRef) {
	act := fmt.Sprintf("a flood of %d pipelined Registers of unique 255-byte names", floodRegisters)
	tag := fmt.Sprintf("%s-%x-", floodSourcePrefix, s.rng.Uint64())
	name := func(i int) string {
		n := fmt.Sprintf("%s%d-", tag, i)
		return n + strings.Repeat("x", 255-len(n))
	}
	session := tag + "#1"
	c, addr, m, err := s.leaderCall(st, &wire.Register{ReqID: 1, Source: name(0), Session: session})
	if err != nil {
		s.report(st, "client", act, false, "%v", err)
		return
	}
	defer c.Close()
	registered, refused := 0, map[string]int{}
	count := func(m wire.Message) {
		switch m := m.(type) {
		case *wire.Registered:
			registered++
		case *wire.Error:
			refused[m.Code]++
		}
	}
	count(m)
	for i := 1; i < floodRegisters; i++ {
		if err := c.Write(&wire.Register{ReqID: uint64(i + 1), Source: name(i), Session: session}); err != nil {
			break
		}
	}
	if err := c.Flush(); err != nil {
		s.report(st, "client", act, false, "at %s: %d registered, then %v", addr, registered, err)
		return
	}
	answered := 1
	for ; answered < floodRegisters; answered++ {
		m, err := c.Read() // within the connection's deadline (dialClient)
		if err != nil {
			break
		}
		count(m)
	}
	s.report(st, "client", act, false, "at %s: %d answered of %d: %d registered, refused %v", addr, answered, floodRegisters, registered, refused)
	for i := 0; i < floodRegisters; i++ {
		if c.Write(&wire.KeepAlive{Source: name(i), Session: session, Leaving: true}) != nil {
			break
		}
	}
	_ = c.Flush()
}

// seqJumpOwn publishes one message of a source of its own at st's group's
// leader, then one far past it.
func (s *stranger) seqJumpOwn(st placement.StoreRef) {
	const act = "a Publish of its own source far past its highest"
	source := fmt.Sprintf("%s-jump-%x", floodSourcePrefix, s.rng.Uint64())
	session := source + "#1"
	c, addr, m, err := s.leaderCall(st, &wire.Register{ReqID: 1, Source: source, Session: session})
	if err != nil {
		s.report(st, "client", act, false, "%v", err)
		return
	}
	defer c.Close()
	defer func() { _ = c.Send(&wire.KeepAlive{Source: source, Session: session, Leaving: true}) }()
	if _, ok := m.(*wire.Registered); !ok {
		s.report(st, "client", act, false, "at %s: registration answered %T", addr, m)
		return
	}
	for i, first := range []uint64{1, 1 + seqJump} {
		err := c.Send(&wire.Publish{ReqID: uint64(i + 2), Source: source, FirstSeq: first, Payloads: s.payloads(1)})
		if err == nil {
			m, err = c.Read()
		}
		if err != nil {
			s.report(st, "client", act, false, "at %s: seq %d: %v", addr, first, err)
			return
		}
		if i == 0 {
			if _, ok := m.(*wire.Ack); !ok {
				s.report(st, "client", act, false, "at %s: its first message answered %T", addr, m)
				return
			}
			continue
		}
		switch m := m.(type) {
		case *wire.Ack:
			s.report(st, "client", act, true, "at %s: seq %d taken, %d past its highest", addr, first, seqJump)
		case *wire.Error:
			s.report(st, "client", act, false, "at %s: refused (%s) %s", addr, m.Code, m.Message)
		default:
			s.report(st, "client", act, false, "at %s: answered %T", addr, m)
		}
	}
}
