package repository

import "math"

// CommandType is the first byte of every replicated command: it says how to
// read the msgpack body that follows. Values are pinned forever; a command
// whose positional body or meaning changes gets a new type, never a reused
// one. Publish grows by keyed fields instead (CmdPublishKeyed). What each
// type's name, decoder and apply rule are is the command table's
// (command_table.go).
type CommandType byte

// Command types of the group's identities, sources and sessions; the
// receivers' types are in receiver_commands.go, CmdMemberAddress in
// members.go, CmdPublishKeyed in command_publish_keyed.go.
const (
	// CmdInitGroup is the first entry of a brand-new group: its identity.
	CmdInitGroup CommandType = 1
	// CmdRegister records a publisher registering a source.
	CmdRegister CommandType = 2
	// CmdPublish carries a run of consecutive messages of one source.
	CmdPublish CommandType = 3
	// CmdPeerGroup records the identity of another group of the deployment.
	CmdPeerGroup CommandType = 4
	// CmdConsumed records how far a receiver has consumed a source.
	CmdConsumed CommandType = 5
	// CmdTrim drops a source's oldest messages: retention.
	CmdTrim CommandType = 6
	// CmdExpireSession frees a source whose publisher session went silent.
	CmdExpireSession CommandType = 7
	// CmdPublishAs is Publish on behalf of a registered publisher session:
	// it is refused unless that session still holds the source.
	CmdPublishAs CommandType = 8
	// CmdPublishChecksums is Publish carrying the CRC32C of each payload.
	CmdPublishChecksums CommandType = 9
	// CmdPublishAsChecksums is PublishAs carrying the CRC32C of each
	// payload.
	CmdPublishAsChecksums CommandType = 10
)

// IgnorableFlag, set in a command's type byte, tells stores that do not know
// the type to skip the entry (advancing their applied index) instead of
// stopping. Only a command whose effect older stores may safely miss may carry
// it: a future, purely advisory command, for instance. Known types are applied
// whether or not the flag is set.
const IgnorableFlag CommandType = 0x80

// InitGroup is the first entry a new group commits: the identity its stores
// keep forever, so that a store of another group (or an empty store) can never
// be mistaken for a member.
type InitGroup struct {
	GroupID  string // random identity created at bootstrap
	Index    int    // the group's index in the deployment file
	UnixNano int64  // bootstrap time, stamped by the proposer
}

// Register records a publisher registering its source with the group. It
// creates the source's repository if the group has never seen the source.
type Register struct {
	Source   string
	Session  string // the publisher's session, so a later registration can tell a new incarnation
	UnixNano int64  // registration time, stamped by the proposer
}

// PeerGroup records the identity of another group of the deployment, as
// learnt by this group's leader.
//
// Each group's leader periodically probes the stores of the other groups and
// commits what it learnt, so that every store of the group remembers the
// other groups' identities durably: a group whose every store was wiped must
// never be silently bootstrapped again while another group remembers its
// identity. Recording the identity already recorded for Index changes
// nothing, so the leader may resend freely.
type PeerGroup struct {
	Index    int    // the other group's index in the deployment file, ≥ 1
	GroupID  string // its identity (its InitGroup.GroupID)
	UnixNano int64  // when the leader learnt it, stamped by the proposer
}

// Consumed records that a receiver has consumed a source up to Seq.
//
// Receivers read a source's messages and acknowledge what they consumed; the
// group's leader commits those acknowledgements so that every store of the
// group knows every receiver's position (for status, and so that retention
// is not held back by receivers that are gone). A position only moves
// forward: recording Seq at or below the recorded one changes nothing, so the
// leader may resend freely and acknowledgements may arrive out of order.
//
// Seq is not checked against the messages the group holds: a receiver merges
// the streams of several groups and may have consumed beyond what this group
// received.
type Consumed struct {
	Source   string
	Receiver string // the receiver's name, 1 to MaxSourceNameLen bytes
	Seq      uint64 // highest sequence number consumed, ≥ 1
	UnixNano int64  // acknowledgement time, stamped by the proposer
}

// Trim drops the messages of Source with sequence numbers at or below
// Through: retention, decided by the leader, applied identically by every
// member.
//
// Each source's repository is bounded by limits (bytes, messages, age). The
// group's leader knows the limits and the time, so it decides what to drop
// (see Repo.RetentionPlan) and commits a Trim; every store then drops exactly
// the same messages, with no clock involved in Apply. The source remembers
// the highest Through applied (SourceInfo.TrimmedThrough): a message at or
// below it is never stored again, so neither a resending publisher nor a
// repair from another group brings released messages back. HighSeq is kept,
// so a publisher resumes after it even once everything was dropped, and a
// Through above HighSeq releases only up to HighSeq: sequence numbers the
// group never saw are not given up. A Through at or below the one already
// applied changes nothing, so the leader may resend freely.
type Trim struct {
	Source   string
	Through  uint64 // drop every message with a sequence number ≤ Through, ≥ 1
	Reason   string // "bytes", "messages", "age", or an operator's note; informational, not recorded
	UnixNano int64  // when the leader decided, stamped by the proposer; informational, not recorded
}

// ExpireSession frees a source whose publisher session went silent.
//
// A source is owned by the publisher session recorded by its last Register
// (SourceInfo.Session). When that publisher stays silent longer than the
// source-activity timeout (it died without saying goodbye), the group's
// leader, which knows the time, commits an ExpireSession so that every store
// agrees the source is free and a new publisher may take it over. If Session
// is the session recorded, it is cleared and remembered as the source's
// ExpiredSession, with UnixNano as ExpiredUnixNano. If another session is
// recorded (a new publisher registered meanwhile, or the session already
// expired), nothing changes: a late, stale or repeated expiry is harmless,
// so the leader may resend freely.
type ExpireSession struct {
	Source   string
	Session  string // the session found silent, non-empty: it is freed only if still the one recorded
	UnixNano int64  // when the leader decided, stamped by the proposer; recorded as ExpiredUnixNano
}

// Body layouts (msgpack arrays, field order pinned):
//
//	InitGroup:     [GroupID str, Index int, UnixNano int]
//	Register:      [Source str, Session str, UnixNano int]
//	Publish:       [Source str, FirstSeq uint, Payloads [bin, ...]]
//	PeerGroup:     [Index int, GroupID str, UnixNano int]
//	Consumed:      [Source str, Receiver str, Seq uint, UnixNano int]
//	Trim:          [Source str, Through uint, Reason str, UnixNano int]
//	ExpireSession: [Source str, Session str, UnixNano int]
//	PublishChecksums:   [Source str, FirstSeq uint, Payloads [bin, ...], Checksums bin]
//	PublishAsChecksums: [Source str, Session str, FirstSeq uint, Payloads [bin, ...], Checksums bin]
//
// Checksums is one bin of 4 bytes per payload, each the payload's CRC32C
// (Castagnoli) big-endian, in payload order.
//
// Decoding is strict (exact element count, no trailing bytes): a store that
// silently ignored a field it does not understand could apply the entry
// differently from its peers.
const (
	initGroupFields     = 3
	registerFields      = 3
	publishFields       = 3
	peerGroupFields     = 3
	consumedFields      = 4
	trimFields          = 4
	expireSessionFields = 3
	publishAsFields     = 4
	publishSumsFields   = 4
	publishAsSumsFields = 5
)

// EncodeInitGroup returns the replicated form of c.
func EncodeInitGroup(c InitGroup) []byte {
	n := 1 + sizeArrayLen(initGroupFields) + sizeString(len(c.GroupID)) + sizeInt(int64(c.Index)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdInitGroup))
	b = appendArrayLen(b, initGroupFields)
	b = appendString(b, c.GroupID)
	b = appendInt(b, int64(c.Index))
	return appendInt(b, c.UnixNano)
}

// EncodeRegister returns the replicated form of c.
func EncodeRegister(c Register) []byte {
	n := 1 + sizeArrayLen(registerFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdRegister))
	b = appendArrayLen(b, registerFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	return appendInt(b, c.UnixNano)
}

// EncodePeerGroup returns the replicated form of c.
func EncodePeerGroup(c PeerGroup) []byte {
	n := 1 + sizeArrayLen(peerGroupFields) + sizeInt(int64(c.Index)) + sizeString(len(c.GroupID)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPeerGroup))
	b = appendArrayLen(b, peerGroupFields)
	b = appendInt(b, int64(c.Index))
	b = appendString(b, c.GroupID)
	return appendInt(b, c.UnixNano)
}

// EncodeConsumed returns the replicated form of c.
func EncodeConsumed(c Consumed) []byte {
	n := 1 + sizeArrayLen(consumedFields) + sizeString(len(c.Source)) + sizeString(len(c.Receiver)) + sizeUint(c.Seq) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdConsumed))
	b = appendArrayLen(b, consumedFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Receiver)
	b = appendUint(b, c.Seq)
	return appendInt(b, c.UnixNano)
}

// EncodeTrim returns the replicated form of c.
func EncodeTrim(c Trim) []byte {
	n := 1 + sizeArrayLen(trimFields) + sizeString(len(c.Source)) + sizeUint(c.Through) + sizeString(len(c.Reason)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdTrim))
	b = appendArrayLen(b, trimFields)
	b = appendString(b, c.Source)
	b = appendUint(b, c.Through)
	b = appendString(b, c.Reason)
	return appendInt(b, c.UnixNano)
}

// EncodeExpireSession returns the replicated form of c.
func EncodeExpireSession(c ExpireSession) []byte {
	n := 1 + sizeArrayLen(expireSessionFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdExpireSession))
	b = appendArrayLen(b, expireSessionFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	return appendInt(b, c.UnixNano)
}

func decodeInitGroup(r *mpReader) InitGroup {
	var c InitGroup
	expectFields(r, CmdInitGroup, initGroupFields)
	c.GroupID = r.str()
	c.Index = groupIndex(r)
	c.UnixNano = r.int()
	return c
}

func decodePeerGroup(r *mpReader) PeerGroup {
	var c PeerGroup
	expectFields(r, CmdPeerGroup, peerGroupFields)
	c.Index = groupIndex(r)
	c.GroupID = r.str()
	c.UnixNano = r.int()
	return c
}

// groupIndex reads a group index, which must fit an int.
func groupIndex(r *mpReader) int {
	idx := r.int()
	if idx < math.MinInt || idx > math.MaxInt {
		r.fail("group index %d out of range", idx)
		return 0
	}
	return int(idx)
}

func decodeRegister(r *mpReader) Register {
	var c Register
	expectFields(r, CmdRegister, registerFields)
	c.Source = r.str()
	c.Session = r.str()
	c.UnixNano = r.int()
	return c
}

func decodeConsumed(r *mpReader) Consumed {
	var c Consumed
	expectFields(r, CmdConsumed, consumedFields)
	c.Source = r.str()
	c.Receiver = r.str()
	c.Seq = r.uint()
	c.UnixNano = r.int()
	return c
}

func decodeTrim(r *mpReader) Trim {
	var c Trim
	expectFields(r, CmdTrim, trimFields)
	c.Source = r.str()
	c.Through = r.uint()
	c.Reason = r.str()
	c.UnixNano = r.int()
	return c
}

func decodeExpireSession(r *mpReader) ExpireSession {
	var c ExpireSession
	expectFields(r, CmdExpireSession, expireSessionFields)
	c.Source = r.str()
	c.Session = r.str()
	c.UnixNano = r.int()
	return c
}
