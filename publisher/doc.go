// Package publisher is the Go SDK for publishing to umstore.
//
// A Publisher owns one source. New registers the source with every store
// group (waiting a bounded time for all of them) and resumes at one past the
// highest sequence number any group holds, so a restarted publisher never
// reuses a sequence number that a reachable group knows.
//
// Send assigns the next sequence number and hands the message to every
// group. A message is stable when the configured intergroup behaviour is
// satisfied (by default: any one group has committed it); stability is
// reported in sequence order through Config.OnStable. Unstable messages are
// bounded by FlightSize. Every message stays in a retention buffer until
// every group has confirmed it, or until the retention size limit forces the
// oldest stable ones out: with intergroup "any" the second group's copy is
// what survives the loss of the first group's majority, so the publisher
// keeps delivering to a slow or returning group after the message is
// already stable.
//
// UM's source events are Config callbacks: OnStable (in order),
// OnGroupStable (each group's confirmations, naming the leader store that
// acknowledged: UM's per-store stability events), OnFlightSize (over and
// under, with FlightNotify, UM's ume_flight_size_behavior notify), and
// OnUnstable (messages past StabilityLifetime, or a group's stability NAK,
// wire.Nak). FlightSizeBytes is UM's ume_flight_size_bytes. RegID and
// SessionID (UM's static RegIDs and ume_session_id) name the registration,
// so a restarted publisher is the same session and takes its source back at
// once. Intragroup (UM's ume_retention_intragroup_stability_behavior) says
// which stores of a group must hold a message before the group confirms it:
// a majority (quorum, the default), every running one (all-active) or every
// one (all); Registration reports what each group applies.
//
// A process with many sources gives their publishers one Connections
// (NewConnections; UM: the sources of one context share its transport):
// each store is then reached over one connection for all of them, and a
// store found silent or no longer leading is left by all at once. Each
// publisher still registers, resumes and is acknowledged on its own.
//
// Inside each group the publisher follows the leader: a store that is not
// the leader answers with a redirect, and a lost connection is re-opened
// (to the leader, or the next store) and everything that group has not
// confirmed is sent again. Stores treat a sequence number they already hold
// as a no-op, so resending is always safe.
//
// Sequence numbers end at wire.MaxSeq (2^53-1): Send refuses to go past it
// and New refuses a source already held up to it, both with
// ErrSequenceExhausted. The stores accept a source's messages only on the
// connection that registered it, which is the only way this package sends
// them.
package publisher
