// Package storegroup runs one store: one member of one store group.
//
// A store is a hashicorp/raft node whose finite state machine is a
// repository (package repository) in a bbolt file, plus a client server
// (package clientserver) that speaks the wire protocol to publishers,
// receivers and other stores, and a raft port (package raftport) that
// admits only the group's members to raft. This package composes them and
// runs the store's life: open, start, the leader's duties, status and
// stop; every raft proposal goes through package proposal.
//
// The data path of a publish (packages clientserver and proposal): the
// client server receives a Publish frame (a batch of contiguous messages of
// one source); the leader proposes it as ONE raft entry, together with the
// frames of the same connection that queued behind its proposals in flight
// and continue it; raft commits the entry on a quorum of the group; the FSM
// applies the committed entries of a whole raft batch in one bbolt
// transaction; and the client server answers Ack as soon as the leader's FSM
// has decided the entry's result, inside that transaction, before the
// repository commits and fsyncs (a batch of publishes leaves the
// transaction open for the next ones, committed together within
// RepositoryCommitInterval: fsm_commit.go). That is safe because the entry is committed
// by then and apply is deterministic: a store whose commit fails stops, and
// replays the entry when it starts again. Under intragroup all-active or all
// the Ack waits, after that, until the members the behaviour names hold the
// entry in their raft logs (clientserver's intragroup.go; raftport's progress.go
// reads their positions off raft's answers). A follower answers NotLeader with the
// leader's client address.
//
// Bootstrap is guarded (SPEC §4 rule 3): a store with any local state never
// bootstraps; an empty store asks every other member of its group what it
// holds (Probe) and the group is bootstrapped only when every member answers
// empty and none knows the group's identity (no store of another group
// remembers it either), and then only by one member: the first, in the
// deployment's order, on the group's preferred host, so that the group's
// first leader is where leader placement wants it (start_decision.go,
// bootstrapper). A group's identity
// is created by its first leader and replicated through the log.
//
// Clients are bounded (clientserver.Limits, ClientLimits here):
// connections per store, per remote address and per process, how long a
// connection may be idle or take over one frame, the sources and receivers
// connections may register, and the largest payload (wire.MaxPayload).
//
// DESIGN.md, beside this file, says why the pieces are where they are.
package storegroup
