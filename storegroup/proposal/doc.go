// Package proposal is the one place a store proposes raft entries.
//
// A Proposer hands commands to the store's raft node, with the timeout a
// proposal may wait to enter the log. Client requests (Register, Consumed,
// Publish), the leader's own duties (InitGroup, PeerGroup, ExpireSession,
// Trim, member addresses) and repair's copies all go through it.
//
// It answers two kinds of proposal: Propose, answered by raft's future once
// the entry is applied on this store, and ProposeDecided, answered as soon
// as the FSM has decided the entry's result inside the repository's write
// transaction, before the repository commits and fsyncs (the early answer
// of a Publish; the FSM calls DecidedBatch). proposer.go says why the early
// answer is safe and how the FSM recognises this store's own entries.
//
// The package knows raft and the repository's results, nothing of the
// network or of the store around it: it needs only a function returning
// the raft node (nil until it runs) and the timeout.
package proposal
