// Package clientserver is a store's client server: it accepts wire-protocol
// connections from publishers, receivers, operators and other stores, and
// answers them for one store.
//
// One connection, from accept to answer:
//
//	server.go     Server, New, Serve, HangUp, WaitConns: the listener and the connections' lifetimes
//	limits.go     Limits: connections per store, per remote address and per process, refused at accept
//	conn.go       the handshake, the frame reader within the time bounds, and the read loop
//	dispatch.go   every request other than Publish: Ping, Probe, Register, Consumed, Members...
//	publish.go    the Publish half: a connection's window of proposals in flight (its
//	              back-pressure), its frames merged into one raft entry and proposed
//	replies.go    the answers, in request order, as their proposals are decided
//	pacing.go     receiver-paced persistence: a publisher held back at its retention limit
//	intragroup.go intragroup all-active and all: an Ack held until the members hold the entry
//	receivers.go  named receivers and the publishers' delivery confirmations
//	subscribe.go  a subscription pushing a source's messages as they are applied
//	fetch.go      Fetch, Sources and RangeDigest: reads of the repository
//	ops.go        an operator's Shutdown and other stores' member moves
//
// What the server needs of its store is Deps, and it touches nothing else:
// the repository for reads, the proposer (package proposal) for every
// write, and narrow functions and interfaces for the rest (leadership, the
// leader's sessions of publishers and receivers, the members' logs, the
// member desk). Package storegroup builds it (client.go) and owns the
// server's lifetime; this package does not import storegroup.
//
// The data path of a publish through it: a Publish frame is read (conn.go),
// checked and gathered with the frames of the same connection that queued
// behind its proposals in flight and continue it (publish.go), proposed as
// one raft entry with proposal.Proposer.ProposeDecided, and answered
// (replies.go) as soon as the leader's FSM has decided the entry's result,
// before the repository commits; under intragroup all-active or all the
// answer waits, after that, for the members (intragroup.go). A follower
// answers NotLeader with the leader's client address.
//
// Clients are bounded (Limits): connections per store, per remote address
// and per process, how long a connection may be idle or take over one
// frame, and the largest payload (wire.MaxPayload).
package clientserver
