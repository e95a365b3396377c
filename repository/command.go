package repository

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CommandType is the first byte of every replicated command: it says how to
// read the msgpack body that follows. Values are pinned forever; a command
// whose body or meaning changes gets a new type, never a reused one.
type CommandType byte

// Command types known to this version.
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

// String names the type for logs and errors.
func (t CommandType) String() string {
	name := ""
	switch t &^ IgnorableFlag {
	case CmdInitGroup:
		name = "InitGroup"
	case CmdRegister:
		name = "Register"
	case CmdPublish:
		name = "Publish"
	case CmdPeerGroup:
		name = "PeerGroup"
	case CmdConsumed:
		name = "Consumed"
	case CmdTrim:
		name = "Trim"
	case CmdExpireSession:
		name = "ExpireSession"
	case CmdPublishAs:
		name = "PublishAs"
	case CmdPublishChecksums:
		name = "PublishChecksums"
	case CmdPublishAsChecksums:
		name = "PublishAsChecksums"
	default:
		name = receiverCommandName(t&^IgnorableFlag) + memberCommandName(t&^IgnorableFlag)
		if name == "" {
			name = fmt.Sprintf("CommandType(%d)", byte(t&^IgnorableFlag))
		}
	}
	if t&IgnorableFlag != 0 {
		name += "|Ignorable"
	}
	return name
}

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

// Publish carries consecutive messages of one source: Payloads[i] has sequence
// number FirstSeq+i. Packing many messages into one entry is how the group
// amortises raft's per-entry cost.
type Publish struct {
	Source   string
	FirstSeq uint64
	Payloads [][]byte
	// Checksums, if not empty, holds the CRC32C (Castagnoli) of each
	// payload as the publisher computed it, in the same order.
	Checksums []uint32
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

// EncodePublish returns the replicated form of c: a CmdPublishChecksums
// when c carries Checksums (one per payload), else a CmdPublish. It is on
// the publishing hot path: it computes the exact size first and allocates
// once, copying each payload exactly once.
func EncodePublish(c Publish) []byte {
	if len(c.Checksums) > 0 {
		n := 1 + sizeArrayLen(publishSumsFields) + sizeString(len(c.Source)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads) + sizeBin(4*len(c.Checksums))
		b := make([]byte, 0, n)
		b = append(b, byte(CmdPublishChecksums))
		b = appendArrayLen(b, publishSumsFields)
		b = appendString(b, c.Source)
		b = appendUint(b, c.FirstSeq)
		b = appendPayloads(b, c.Payloads)
		return appendChecksums(b, c.Checksums)
	}
	n := 1 + sizeArrayLen(publishFields) + sizeString(len(c.Source)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPublish))
	b = appendArrayLen(b, publishFields)
	b = appendString(b, c.Source)
	b = appendUint(b, c.FirstSeq)
	return appendPayloads(b, c.Payloads)
}

// appendChecksums appends checksums as one bin of 4 big-endian bytes each.
func appendChecksums(b []byte, sums []uint32) []byte {
	n := 4 * len(sums)
	switch {
	case n <= math.MaxUint8:
		b = append(b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpBin16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpBin32), uint32(n))
	}
	for _, c := range sums {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return b
}

// readChecksums reads the Checksums bin of a command with n payloads.
func readChecksums(r *mpReader, n int) []uint32 {
	raw := r.raw()
	if r.err != nil {
		return nil
	}
	if len(raw) != 4*n {
		r.fail("checksums of %d bytes for %d payloads, want 4 bytes each", len(raw), n)
		return nil
	}
	sums := make([]uint32, n)
	for i := range sums {
		sums[i] = binary.BigEndian.Uint32(raw[4*i:])
	}
	return sums
}

// sizePayloads and appendPayloads encode a Publish's payloads: an array of
// bin values.
func sizePayloads(payloads [][]byte) int {
	n := sizeArrayLen(len(payloads))
	for _, p := range payloads {
		n += sizeBin(len(p))
	}
	return n
}

func appendPayloads(b []byte, payloads [][]byte) []byte {
	b = appendArrayLen(b, len(payloads))
	for _, p := range payloads {
		b = appendBin(b, p)
	}
	return b
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

// IsIgnorable reports whether data is a command marked with IgnorableFlag.
func IsIgnorable(data []byte) bool {
	return len(data) > 0 && CommandType(data[0])&IgnorableFlag != 0
}

// DecodeCommand reads an encoded command and returns an InitGroup, Register,
// Publish, PeerGroup, Consumed, Trim, ExpireSession, PublishAs,
// RegisterReceiver, ExpireReceiver, ForgetReceiver or RegisterPaced value. A type this version does not know
// gives an error wrapping ErrUnknownCommand (see IsIgnorable for whether it
// may be skipped); a body that cannot be read, or empty data, gives an error
// wrapping ErrBadCommand.
//
// A decoded Publish's Payloads alias data: do not modify data while they are
// in use, and copy them to keep them beyond data's lifetime.
func DecodeCommand(data []byte) (any, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrBadCommand)
	}
	t := CommandType(data[0])
	r := mpReader{b: data, off: 1}
	var cmd any
	switch t &^ IgnorableFlag {
	case CmdInitGroup:
		cmd = decodeInitGroup(&r)
	case CmdRegister:
		cmd = decodeRegister(&r)
	case CmdPublish:
		cmd = decodePublish(&r)
	case CmdPeerGroup:
		cmd = decodePeerGroup(&r)
	case CmdConsumed:
		cmd = decodeConsumed(&r)
	case CmdTrim:
		cmd = decodeTrim(&r)
	case CmdExpireSession:
		cmd = decodeExpireSession(&r)
	case CmdPublishAs:
		cmd = decodePublishAs(&r)
	case CmdPublishChecksums:
		cmd = decodePublishChecksums(&r)
	case CmdPublishAsChecksums:
		cmd = decodePublishAsChecksums(&r)
	default:
		var ok bool
		if cmd, ok = decodeReceiverCommand(t&^IgnorableFlag, &r); ok {
			break
		}
		if cmd, ok = decodeMemberCommand(t&^IgnorableFlag, &r); ok {
			break
		}
		hint := "this store must be upgraded to apply it"
		if t&IgnorableFlag != 0 {
			hint = "it is marked ignorable and may be skipped"
		}
		return nil, fmt.Errorf("%w %d: %s", ErrUnknownCommand, byte(t&^IgnorableFlag), hint)
	}
	r.end()
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v body: %v", ErrBadCommand, t&^IgnorableFlag, r.err)
	}
	return cmd, nil
}

func expectFields(r *mpReader, t CommandType, want int) {
	if n := r.arrayLen(); r.err == nil && n != want {
		r.fail("%v body has %d fields, want %d", t, n, want)
	}
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

// PublishAs is Publish sent by the publisher session that registered the
// source. Applying it checks that the session still holds the source: the
// messages of a publisher whose session expired, or that another publisher
// replaced, arriving late (queued in a socket, or from a frozen leader) are
// refused rather than stored under sequence numbers the new publisher
// reuses.
//
//	PublishAs: [Source str, Session str, FirstSeq uint, Payloads [bin, ...]]
type PublishAs struct {
	Session string
	Publish
}

// EncodePublishAs returns the replicated form of c: a
// CmdPublishAsChecksums when c carries Checksums, else a CmdPublishAs.
func EncodePublishAs(c PublishAs) []byte {
	if len(c.Checksums) > 0 {
		n := 1 + sizeArrayLen(publishAsSumsFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads) + sizeBin(4*len(c.Checksums))
		b := make([]byte, 0, n)
		b = append(b, byte(CmdPublishAsChecksums))
		b = appendArrayLen(b, publishAsSumsFields)
		b = appendString(b, c.Source)
		b = appendString(b, c.Session)
		b = appendUint(b, c.FirstSeq)
		b = appendPayloads(b, c.Payloads)
		return appendChecksums(b, c.Checksums)
	}
	n := 1 + sizeArrayLen(publishAsFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPublishAs))
	b = appendArrayLen(b, publishAsFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	b = appendUint(b, c.FirstSeq)
	return appendPayloads(b, c.Payloads)
}

func decodePublishChecksums(r *mpReader) Publish {
	var c Publish
	expectFields(r, CmdPublishChecksums, publishSumsFields)
	c.Source = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	c.Checksums = readChecksums(r, len(c.Payloads))
	return c
}

func decodePublishAsChecksums(r *mpReader) PublishAs {
	var c PublishAs
	expectFields(r, CmdPublishAsChecksums, publishAsSumsFields)
	c.Source = r.str()
	c.Session = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	c.Checksums = readChecksums(r, len(c.Payloads))
	return c
}

func decodePublishAs(r *mpReader) PublishAs {
	var c PublishAs
	expectFields(r, CmdPublishAs, publishAsFields)
	c.Source = r.str()
	c.Session = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	return c
}

func decodePublish(r *mpReader) Publish {
	var c Publish
	expectFields(r, CmdPublish, publishFields)
	c.Source = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	return c
}

// readPayloads reads a Publish's payloads; they point into the entry.
func readPayloads(r *mpReader) [][]byte {
	n := r.arrayLen()
	if r.err != nil {
		return nil
	}
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = r.raw()
	}
	return payloads
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
