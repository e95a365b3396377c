package repository

import "strconv"

// The replicated commands of durable receivers and receiver-paced
// persistence (RPP). Each is a new command type: the bodies of the older
// types never change (see CommandType).

// Command types of durable receivers.
const (
	// CmdRegisterReceiver records a named receiver registering with a
	// source: its session, whether it paces the source.
	CmdRegisterReceiver CommandType = 11
	// CmdExpireReceiver marks a receiver silent for its activity timeout
	// inactive: it no longer holds a paced source back.
	CmdExpireReceiver CommandType = 12
	// CmdForgetReceiver deletes the state of a receiver whose state
	// lifetime ended.
	CmdForgetReceiver CommandType = 13
	// CmdRegisterPaced is Register that also sets how the source's
	// repository is paced by its receivers.
	CmdRegisterPaced CommandType = 14
)

// Pacing says how a source's repository is paced: by its retention limits
// alone (source-paced persistence, UM's SPP, the default) or also by its
// paced receivers (receiver-paced persistence, UM's RPP). It is part of the
// replicated rules: its values never change.
type Pacing uint8

const (
	// PacingNone is source-paced persistence: messages are kept up to the
	// retention limits, whoever consumed them.
	PacingNone Pacing = 0
	// PacingBlocking is receiver-paced persistence where, at the retention
	// limit, the publisher is held back rather than a message released
	// that an active paced receiver has not consumed (UM's RPP mode 1).
	PacingBlocking Pacing = 1
	// PacingNonBlocking is receiver-paced persistence where, at the limit,
	// the oldest messages are released anyway and the lagging receivers
	// see unrecoverable loss (UM's RPP mode 2).
	PacingNonBlocking Pacing = 2
)

// String names the mode as the flags and status do.
func (p Pacing) String() string {
	switch p {
	case PacingNone:
		return "none"
	case PacingBlocking:
		return "blocking"
	case PacingNonBlocking:
		return "non-blocking"
	}
	return "Pacing(" + strconv.Itoa(int(p)) + ")"
}

// RegisterReceiver records that the receiver named Receiver registered with
// Source for session Session (UM's receiver RegID / session ID). The group
// keeps, per source and receiver name, the last position consumed, the
// session, whether the receiver paces the source and whether it is active.
//
// A registration makes the receiver active, whatever its state before, and
// records Session and Paced; the position is kept, so a receiver that comes
// back resumes after it. Two live receivers with one name are kept apart by
// the leader before it proposes (the session it holds in memory); apply only
// records. The source must be one the group holds (ErrUnknownSource
// otherwise): a registration never creates a source.
type RegisterReceiver struct {
	Source   string
	Receiver string // 1 to MaxSourceNameLen bytes
	Session  string // non-empty: the receiver instance
	Paced    bool   // an RPP receiver: it holds a paced source's messages until it consumed them
	UnixNano int64  // registration time, stamped by the proposer
}

// ExpireReceiver marks a receiver inactive: the leader saw it silent for the
// receiver activity timeout (seed 002: a survivor cleans up a dead client's
// state). An inactive receiver keeps its position but holds nothing back:
// a paced source's retention goes on without it. It takes effect only if
// Session is still the receiver's session and the receiver is active, so a
// late, stale or repeated expiry changes nothing.
type ExpireReceiver struct {
	Source   string
	Receiver string
	Session  string // the session found silent
	UnixNano int64  // when the leader decided, stamped by the proposer; recorded
}

// ForgetReceiver deletes what the group recorded about a receiver whose
// state lifetime ended (UM receiver-state-lifetime): its position is gone,
// and a receiver registering under the name again starts as a new one. It
// takes effect only if the receiver is inactive and Session is still its
// session: a receiver that registered again meanwhile is kept.
type ForgetReceiver struct {
	Source   string
	Receiver string
	Session  string
	UnixNano int64 // when the leader decided; informational, not recorded
}

// RegisterPaced is Register that also records how the source is paced
// (Pacing): the leader proposes it instead of Register when a publisher asks
// for receiver-paced persistence, or registers a source that was paced.
// Pacing above PacingNonBlocking is refused (ErrBadCommand) and nothing is
// recorded.
type RegisterPaced struct {
	Register
	Pacing Pacing
}

// Body layouts (msgpack arrays, field order pinned):
//
//	RegisterReceiver: [Source str, Receiver str, Session str, Paced bool, UnixNano int]
//	ExpireReceiver:   [Source str, Receiver str, Session str, UnixNano int]
//	ForgetReceiver:   [Source str, Receiver str, Session str, UnixNano int]
//	RegisterPaced:    [Source str, Session str, Pacing uint, UnixNano int]
const (
	registerReceiverFields = 5
	expireReceiverFields   = 4
	forgetReceiverFields   = 4
	registerPacedFields    = 4
)

// msgpack booleans.
const (
	mpFalse = 0xc2
	mpTrue  = 0xc3
)

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, mpTrue)
	}
	return append(b, mpFalse)
}

// boolean reads a msgpack boolean.
func (r *mpReader) boolean() bool {
	switch c := r.byte1(); {
	case r.err != nil:
		return false
	case c == mpTrue:
		return true
	case c == mpFalse:
		return false
	default:
		r.fail("expected a boolean, found code 0x%02x", c)
		return false
	}
}

// EncodeRegisterReceiver returns the replicated form of c.
func EncodeRegisterReceiver(c RegisterReceiver) []byte {
	n := 1 + sizeArrayLen(registerReceiverFields) + sizeString(len(c.Source)) + sizeString(len(c.Receiver)) + sizeString(len(c.Session)) + 1 + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdRegisterReceiver))
	b = appendArrayLen(b, registerReceiverFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Receiver)
	b = appendString(b, c.Session)
	b = appendBool(b, c.Paced)
	return appendInt(b, c.UnixNano)
}

// EncodeExpireReceiver returns the replicated form of c.
func EncodeExpireReceiver(c ExpireReceiver) []byte {
	return encodeReceiverSession(CmdExpireReceiver, expireReceiverFields, c.Source, c.Receiver, c.Session, c.UnixNano)
}

// EncodeForgetReceiver returns the replicated form of c.
func EncodeForgetReceiver(c ForgetReceiver) []byte {
	return encodeReceiverSession(CmdForgetReceiver, forgetReceiverFields, c.Source, c.Receiver, c.Session, c.UnixNano)
}

func encodeReceiverSession(t CommandType, fields int, source, receiver, session string, unixNano int64) []byte {
	n := 1 + sizeArrayLen(fields) + sizeString(len(source)) + sizeString(len(receiver)) + sizeString(len(session)) + sizeInt(unixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(t))
	b = appendArrayLen(b, fields)
	b = appendString(b, source)
	b = appendString(b, receiver)
	b = appendString(b, session)
	return appendInt(b, unixNano)
}

// EncodeRegisterPaced returns the replicated form of c.
func EncodeRegisterPaced(c RegisterPaced) []byte {
	n := 1 + sizeArrayLen(registerPacedFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(uint64(c.Pacing)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdRegisterPaced))
	b = appendArrayLen(b, registerPacedFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	b = appendUint(b, uint64(c.Pacing))
	return appendInt(b, c.UnixNano)
}

func decodeRegisterReceiver(r *mpReader) RegisterReceiver {
	var c RegisterReceiver
	expectFields(r, CmdRegisterReceiver, registerReceiverFields)
	c.Source = r.str()
	c.Receiver = r.str()
	c.Session = r.str()
	c.Paced = r.boolean()
	c.UnixNano = r.int()
	return c
}

func decodeExpireReceiver(r *mpReader) ExpireReceiver {
	var c ExpireReceiver
	expectFields(r, CmdExpireReceiver, expireReceiverFields)
	c.Source = r.str()
	c.Receiver = r.str()
	c.Session = r.str()
	c.UnixNano = r.int()
	return c
}

func decodeForgetReceiver(r *mpReader) ForgetReceiver {
	var c ForgetReceiver
	expectFields(r, CmdForgetReceiver, forgetReceiverFields)
	c.Source = r.str()
	c.Receiver = r.str()
	c.Session = r.str()
	c.UnixNano = r.int()
	return c
}

func decodeRegisterPaced(r *mpReader) RegisterPaced {
	var c RegisterPaced
	expectFields(r, CmdRegisterPaced, registerPacedFields)
	c.Source = r.str()
	c.Session = r.str()
	mode := r.uint()
	if r.err == nil && mode > 255 {
		r.fail("pacing mode %d out of range", mode)
	}
	c.Pacing = Pacing(mode)
	c.UnixNano = r.int()
	return c
}
