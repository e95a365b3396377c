// Package repository holds the replicated state of one store group: the
// group's identity, the identities of the deployment's other groups as the
// group's leader learnt them (PeerGroups), and, for every source, the
// messages the group has committed (by sequence number) with their
// bookkeeping — highest and lowest sequence number held, gaps the group never
// received, how far retention released it, the last registration and the
// last session expired — and how far each of its receivers has consumed it
// (Receivers). It lives in one bbolt file per store and knows nothing of raft
// or the network: the raft FSM adapter in package storegroup feeds it
// committed log entries (Apply), asks it for snapshots (Snapshot) and
// installs snapshots from the leader (Restore).
//
// # Commands
//
// Each log entry carries one command: a type byte followed by a msgpack body
// (see EncodePublish, EncodeRegister, EncodeInitGroup, EncodePeerGroup,
// EncodeConsumed, EncodeTrim, EncodeExpireSession, EncodePublishAs, the
// receivers' EncodeRegisterReceiver, EncodeExpireReceiver,
// EncodeForgetReceiver and EncodeRegisterPaced, EncodeMemberAddress, and
// DecodeCommand). Every type is one row of one table (command_table.go):
// its number, name, decoder and apply rule, which String, DecodeCommand and
// Apply all read. Types and body layouts are pinned; samples of every type
// are kept under testdata/ and a test checks that they still decode. A
// future command that older stores may safely skip carries IgnorableFlag in
// its type byte; any other unknown command makes Apply fail, so that an
// outdated store stops instead of silently diverging from its peers.
//
// Publish grows by keyed fields, not by new types: the keyed Publish body
// (CmdPublishKeyed) carries optional fields only when they are set, and a
// store meeting a field it does not know skips it only if the field is
// marked advisory (its key starts with "_"); any other unknown field stops
// the store (ErrUnknownField), as an unknown command type does. The keyed
// body is decoded, applied and pinned, but not written yet: the Publish
// encoders still write the four positional types, so that every store
// running an older release keeps applying the log. DESIGN.md says why.
//
// # Determinism and idempotence
//
// Every member of a group applies the same log and must end with the same
// state. Apply therefore depends only on the previous state and the entries:
// no clock (the proposer stamps times into commands), no randomness, no map
// iteration order, and no dependence on how the log is cut into batches.
// Refusals of a command (a malformed body, a group identity mismatch, a
// consumption record for a source the group does not hold) are part of that
// state machine: they come back as Result.Err identically on every store and
// the entry still counts as applied. Publishing a sequence number the
// repository already holds is a no-op, so a publisher may resend freely; a
// receiver's position only moves forward, so its acknowledgements may be
// resent or reordered. Digest hashes the logical content so tests can compare members.
//
// # Retention
//
// Retention goes through the log like everything else: the group's leader,
// which knows the limits and the time, decides what to drop (RetentionPlan
// helps with size limits) and commits a Trim; every store drops exactly the
// same messages. A source remembers how far it was trimmed, and never stores
// a message at or below that point again, whoever resends it.
//
// # Sessions
//
// A source is owned by the publisher session its last Register recorded.
// When that publisher goes silent for too long, the group's leader, which
// knows the time, commits an ExpireSession; every store then clears the
// session (remembering it as the one expired) and a new publisher may take
// the source over. An expiry naming a session that is no longer the one
// recorded (a new publisher registered meanwhile) changes nothing, so a late
// or repeated one is harmless.
//
// A client's messages come as PublishAs, naming the session that registered
// the source on the client's connection: it is refused (ErrStaleSession)
// unless that session still holds the source. A plain Publish names no
// session; the stores propose it only for their own copies between groups
// (intergroup repair), never for a client.
//
// # Sequence numbers
//
// A source's sequence numbers run from 1 to MaxSeq (2^53-1). A Publish or
// PublishAs reaching above MaxSeq is refused as a whole (ErrSeqCeiling), like
// any other invalid command: on every store, whoever proposed the entry, so
// not even a forged log entry can use up a source's sequence numbers. Within
// the range, a held sequence number is never overwritten (a different
// payload is counted as a conflict and the held one kept), and one at or
// below TrimmedThrough is never stored again; both are acknowledged as
// no-ops, so a publisher's resends stay harmless.
//
// # The applied index
//
// Raft runs with NoSnapshotRestoreOnStart: on restart it does not restore a
// snapshot into the FSM but trusts the FSM to be durable up to at least the
// latest snapshot's index, and replays committed entries after that index,
// some of which the repository may already hold. So the repository records
// the last applied raft index in the same bbolt transaction as the data it
// produced: after a crash the file is exactly "everything up to index N",
// never data without its index or the reverse, and Apply skips every entry
// at or below N. One transaction per batch also means one fsync per batch.
//
// # Concurrency
//
// Apply, Snapshot and Restore are called from one goroutine (the FSM's).
// Reads (Sources, Source, Read, Receivers, RetentionPlan, Digest,
// AppliedIndex, ...) may run at any time in their own read transactions;
// during a Restore they wait for the new file.
//
// # Checksums and the raft log
//
// Every stored message keeps its CRC32C (Castagnoli, Checksum): the one a
// PublishChecksums or PublishAsChecksums entry carries (an entry whose
// payloads do not match is never applied: Apply fails with ErrCorrupt), or
// one computed at apply for the older Publish and PublishAs. Read checks
// each message before returning it and never returns a damaged one
// (CorruptError); a repair's copy of it replaces it (heal.go). VerifyEntry
// checks an entry against the checksums it carries without applying it:
// the raft port runs it on every entry a store sends or receives, so that
// a damaged entry never reaches another store.
//
// With Options.Log, the repository is an index over the raft log: a
// Publish's messages are stored as references into the entry that carried
// them, read back through the LogReader, and LowestLogRef tells the log
// store which entries it must keep (logref.go). Snapshots carry every
// message inline either way (snapstream.go has the format; writing it,
// reading it and building a file from it are the snapstream_*.go files).
//
// # A damaged file
//
// Open checks the file against its bbolt meta pages before mapping it and
// refuses a file cut short (ErrFormat and boltfile.ErrDamaged). Every later
// use of the mapped file is guarded (guard.go): a fault reading it, on
// whichever goroutine, is returned as an error, the repository is not used
// again, and Options.OnFault tells its owner, which stops.
//
// # Receivers
//
// A named receiver's record (Receivers, Receiver) holds how far it consumed
// the source (Consumed, forward only) and, once it registered
// (RegisterReceiver), its session, whether it paces the source and whether
// it is active; the leader expires a silent one (ExpireReceiver: inactive,
// position kept) and forgets one whose state lifetime ended
// (ForgetReceiver). A source registered with RegisterPaced records its
// receiver-paced persistence mode, and Pacing tells the leader what the
// active paced receivers hold back. As for sessions, an expiry or forget
// that no longer matches the record changes nothing.
package repository
