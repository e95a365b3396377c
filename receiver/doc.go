// Package receiver is the Go SDK for reading a source's messages back from
// umstore.
//
// A Receiver reads from every store group: each range is fetched from one
// group's leader, and any sequence number that group does not hold is asked
// of the other groups, so messages arrive in sequence order, each exactly
// once, whichever group holds them. A range that no reachable group holds is
// reported, never skipped silently.
//
// A read keeps the messages it fetched and the ranges it misses, never a
// slot per sequence number, so its memory follows what the source holds,
// not the width of the range asked for: reading [1, 2^64-1] of a small
// source is as cheap as reading what it holds.
//
// # Durable receivers
//
// A receiver with a Config.Name is durable (UM's receiver RegID / session
// ID). It registers under its name with every group, which record through
// their logs, per source and name, the last message it consumed, whether it
// paces the source, and whether it is active. Read and Follow from Resume
// start one past that position (a new name starts at the oldest retained
// message); Register tells where, and what each group answered. When the
// groups recorded different positions, Config.Consensus decides (lowest,
// majority, highest; see Consensus for what each risks).
//
// A message is consumed once the handler returns it without an error, or,
// with Config.ExplicitAck, once Ack covers it (an Ack covers every earlier
// message too). Acknowledgements are batched: each group is told the
// position at most once per Config.AckInterval (100ms), a raft entry only
// when it moved, never one per message; between moves the receiver sends a
// keep-alive every KeepAliveInterval (3s). Close records the last position
// and frees the name.
//
// One live receiver per name and source: a second is refused
// (ErrNameBusy) until the first closes, or stays silent for the stores'
// receiver-activity-timeout (30s), after which the leader expires it
// through the log. An expired receiver keeps its position, and holds no
// paced source back any more; registering again makes it active again. Its
// state is forgotten only after the stores' receiver-state-lifetime (by
// default never).
//
// # What "durable" guarantees
//
// At least once, in order, across a crash of the receiver: a receiver
// started again under its name is delivered every message after the
// position its groups recorded, and that position never passes a message
// the receiver did not consume (it is only ever acknowledged after the
// handler returned it, or Ack covered it). So a crash loses nothing the
// stores still hold. It may deliver again what the crashed receiver
// consumed after its last recorded acknowledgement: at most what it
// consumed in one AckInterval plus the time the acknowledgement took to
// commit (one raft commit, a few milliseconds; longer while a group's
// leader changes). An application that must not act twice deduplicates by
// sequence number, as UM's docs advise.
//
// What it does not guarantee:
//
//   - exactly once: the redelivery above;
//   - messages retention released: a receiver that is away longer than the
//     source's retention keeps, resumes after a gap, reported as
//     unrecoverable loss (Follow's onMissing, Read's *MissingError). Only a
//     paced receiver of a source with blocking receiver-paced persistence
//     holds messages back for itself, and only while it is active;
//   - a position recorded in a group that was unreachable for the last
//     acknowledgements: under Lowest such a group makes the receiver
//     redeliver what it missed;
//   - that two processes never share a name: the leader refuses a second
//     live session, but each group does so on its own, so across a
//     partition longer than the activity timeout two receivers may each
//     hold the name in a different group. Give each consumer its own name.
//
// # Restarting a receiver from a harness
//
// A process that runs a durable receiver and may be killed (a chaos child,
// a service under a supervisor) needs no state of its own:
//
//	cfg := receiver.DefaultConfig()
//	cfg.Source, cfg.Groups, cfg.Name = source, groups, "follower-1"
//	r, _ := receiver.New(cfg)
//	reg, err := r.Register(ctx) // waits out the killed incarnation's activity timeout
//	// reg.Resume (0: a new name) is where delivery starts: every message
//	// from there on is delivered at least once, in order.
//	err = r.Follow(ctx, receiver.Resume, handle, onLoss)
//	r.Close() // on a clean stop: records the position, frees the name
//
// After kill -9 the stores still hold the name for the killed session until
// the receiver-activity-timeout (30s; umstored --receiver-activity-timeout),
// and Register waits for it; a restarted process that reuses the killed
// one's Config.Session is let in at once. The registration's Resume and
// Groups say where delivery restarts and why, for a checker of
// "every stable message at least once, in order".
package receiver
