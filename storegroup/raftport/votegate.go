package raftport

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// Position is the (term, index) of a log's last entry; raft compares logs
// by term first, then index. It is recorded as JSON in a rejoining store's
// record of its target (storegroup's rejoin.go), hence the tags.
type Position struct {
	Term  uint64 `json:"term"`
	Index uint64 `json:"index"`
}

// AtLeast reports whether a log ending at p is at least as up to date as
// one ending at q.
func (p Position) AtLeast(q Position) bool {
	return p.Term > q.Term || (p.Term == q.Term && p.Index >= q.Index)
}

func (p Position) String() string { return fmt.Sprintf("term %d index %d", p.Term, p.Index) }

// VoteGate guards a store that rejoins its group empty (wiped, or a new
// disk) against raft's amnesia hazard. hashicorp/raft lets a node with an
// empty or partial log grant its vote to any candidate whose log is at least
// as long as its own; the old incarnation of this store may have helped
// commit entries that the candidate lacks, and its vote would let the
// candidate win and truncate them from everyone.
//
// While shut, the gate answers vote and pre-vote requests itself and grants
// them only to candidates whose log reaches target: the last log position
// of the group's leader (or of the most up-to-date member) when this store
// joined, which covers every entry committed before the wipe. Once the
// store has applied up to target it holds those entries itself, and the
// gate opens: raft's own rules are then enough.
type VoteGate struct {
	mu     sync.Mutex
	shut   bool
	target Position
}

// Close shuts the gate until the store reaches target.
func (g *VoteGate) Close(target Position) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.target = true, target
}

// Open lets raft decide votes by itself.
func (g *VoteGate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = false
}

// State returns whether the gate is shut and its target.
func (g *VoteGate) State() (bool, Position) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut, g.target
}

// Allows reports whether a candidate whose log ends at cand may have this
// store's vote (subject to raft's own rules).
func (g *VoteGate) Allows(cand Position) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.shut || cand.AtLeast(g.target)
}

// The gate's side of Transport (port.go): every RPC raft is to see passes
// through filter, which answers the votes the gate refuses.

// Consumer implements raft.Transport: the RPCs that passed the gate.
func (g *Transport) Consumer() <-chan raft.RPC { return g.out }

func (g *Transport) filter() {
	in := g.NetworkTransport.Consumer()
	for {
		select {
		case <-g.done:
			return
		case rpc := <-in:
			if g.refuse(rpc) {
				continue
			}
			select {
			case g.out <- rpc:
			case <-g.done:
				return
			}
		}
	}
}

// refuse answers a vote request the gate does not allow, and an
// AppendEntries whose entries arrived damaged (entrycheck.go), and reports
// whether it did.
func (g *Transport) refuse(rpc raft.RPC) bool {
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(g.localID), Addr: []byte(g.LocalAddr())}
	switch req := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		return g.refuseDamaged(rpc, req, header)
	case *raft.RequestVoteRequest:
		cand := Position{Term: req.LastLogTerm, Index: req.LastLogIndex}
		if g.gate.Allows(cand) {
			return false
		}
		g.refused(string(req.ID), cand)
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: header, Term: req.Term, Granted: false}, nil)
		return true
	case *raft.RequestPreVoteRequest:
		cand := Position{Term: req.LastLogTerm, Index: req.LastLogIndex}
		if g.gate.Allows(cand) {
			return false
		}
		g.refused(string(req.ID), cand)
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: header, Term: req.Term, Granted: false}, nil)
		return true
	}
	return false
}
