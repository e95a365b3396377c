// Package raftport is a store's raft port: the listener and dialer raft's
// network transport runs over, the proof of membership every connection
// gives before raft reads a byte, the vote gate of a store that rejoined
// empty, and the leader's record of what its members' answers said.
//
// One connection, from dial or accept to raft:
//
//	port.go       Config, Open, Transport: the port as the store configures it, and what raft uses of it
//	stream.go     the stream layer: bounded handshakes at accept, outgoing connections from the host's address
//	auth.go       member authentication: TLS peer identity and source address, internal/memberauth's handshake
//	auth_conn.go  idle accepted connections closed; quiet dialed ones replaced before raft writes on them
//	refusal.go    Refusal: why a peer was refused, counted and logged at most once per address in a while
//	votegate.go   VoteGate, Position: votes refused to candidates behind the group's last entry
//	progress.go   Progress: the members' AppendEntries and InstallSnapshot answers, for the intragroup rule
//	entrycheck.go EntryCheck: a damaged log entry is neither sent nor accepted
//	member.go     Member and DialFunc, shared with package storegroup
//
// Package storegroup builds Config from its own Config in one place
// (open.go) and owns the port's lifetime; the store's address book is
// given as Config.Current and Config.Addresses, so a member whose host was
// replaced is dialed, and checked, at its new host. This package does not
// import storegroup.
//
// Transport embeds raft's NetworkTransport, so raft still finds its
// optional methods (WithPreVote, WithClose, pipelining); it replaces
// Consumer, to answer the votes the gate refuses itself, and AppendEntries,
// AppendEntriesPipeline and InstallSnapshot, to record the members' answers
// on their way back to raft and to check the entries sent.
package raftport
