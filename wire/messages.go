package wire

// Version is the protocol version this package speaks.
const Version = 1

// Type is the type byte of a frame.
type Type byte

// Frame types. The numbers are the protocol: never renumber them.
const (
	TypeHello      Type = 1
	TypeWelcome    Type = 2
	TypeError      Type = 3
	TypeRegister   Type = 4
	TypeRegistered Type = 5
	TypePublish    Type = 6
	TypeAck        Type = 7
	TypeNotLeader  Type = 8
	TypeFetch      Type = 9
	TypeFetchReply Type = 10
	TypeProbe      Type = 11
	TypeProbeReply Type = 12
	TypeSources    Type = 13
	TypeSourceList Type = 14
	TypeSubscribe  Type = 15
	TypeDeliver    Type = 16
	TypeConsumed   Type = 17
	TypeOK         Type = 18
	TypeShutdown   Type = 19
	TypeKeepAlive  Type = 20
	TypeNak        Type = 21

	TypePing             Type = 30
	TypePong             Type = 31
	TypeRangeDigest      Type = 32
	TypeRangeDigestReply Type = 33
)

// Message is any protocol message.
type Message interface {
	// Type is the frame type that carries this message.
	Type() Type
}

// Hello opens a connection: the client names itself and its protocol
// version, and presents the deployment's shared token when one is set.
type Hello struct {
	_msgpack struct{} `msgpack:",as_array"`
	Version  int
	Client   string
	Token    string
}

// Welcome accepts a Hello and says which store answered.
type Welcome struct {
	_msgpack struct{} `msgpack:",as_array"`
	Version  int
	Store    string
	Group    int
}

// Error codes carried by Error.
const (
	CodeBadRequest  = "bad-request"  // the request is malformed or invalid
	CodeVersion     = "version"      // unsupported protocol version
	CodeTooLarge    = "too-large"    // a frame or batch is over a limit
	CodeUnavailable = "unavailable"  // the store cannot serve now; retry later or elsewhere
	CodeUnknown     = "unknown-type" // the frame type is not known
	CodeInternal    = "internal"     // the store failed; the request may be retried
	CodeAuth        = "unauthorized" // the client did not present the deployment's token
	CodeBusy        = "source-busy"  // another live publisher holds the source
	// CodeNotRegistered refuses a Publish sent on a connection that has not
	// registered its source: register the source on this connection first.
	CodeNotRegistered = "not-registered"
	// CodeChecksum refuses a Publish whose payload does not match the
	// checksum sent with it: it was damaged on its way, nothing of the
	// frame was stored, and sending it again is safe.
	CodeChecksum = "checksum"
	// CodeFenced refuses a Register from an earlier incarnation of a
	// publisher whose later incarnation (same session identity, higher
	// epoch) holds the source: the earlier one must stop publishing.
	CodeFenced = "fenced"
	// CodeForbidden refuses a request the client's identity may not make
	// (a deployment with client identities, docs/security.md): the message
	// names the identity and the permission. Every store refuses it alike,
	// so trying another store or again does not help.
	CodeForbidden = "forbidden"

	// CodeMembersDown refuses a Register or RegisterSource whose intragroup
	// behaviour is all while a store of the group is not running: the group
	// could confirm nothing, so, as UM does, it does not complete the
	// registration. The message names the missing store; start it (the
	// publisher tries again) or register with all-active or quorum.
	CodeMembersDown = "members-down"
)

// Error reports that a request (ReqID, or 0 for the connection) failed.
type Error struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Code     string
	Message  string
}

// Error makes a wire Error usable as a Go error.
func (e *Error) Error() string { return "store error (" + e.Code + "): " + e.Message }

// Register asks a group's leader for the state of a source: the reply says
// the highest sequence number the group holds, so a publisher resumes after
// it. Registration goes through the group's log, so the answer reflects
// everything the group has committed.
type Register struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Session  string
}

// Registered answers Register and RegisterSource.
//
// Intragroup names the intragroup stability behaviour the group applies to
// this connection's Publish frames of Source ("quorum", "all-active" or
// "all"): the deployment's, or the stricter one RegisterSource asked for.
// A store older than the field sends none (empty): it applies "quorum".
type Registered struct {
	_msgpack   struct{} `msgpack:",as_array"`
	ReqID      uint64
	Source     string
	Group      int
	GroupID    string
	HighSeq    uint64 // highest sequence number held, 0 if none
	LowSeq     uint64 // oldest sequence number held, 0 if none
	Intragroup string
}

// Publish carries contiguous messages FirstSeq, FirstSeq+1, ... of one
// source. The leader makes the whole batch one raft entry. A store accepts
// it only on a connection that registered Source first (anything else is an
// Error with CodeNotRegistered) and only for sequence numbers 1 to MaxSeq.
//
// Checksums, when present, holds the CRC32C (Checksum) of each payload, in
// the same order; a store refuses the whole frame, storing nothing, when
// one does not match (CodeChecksum). It is empty in frames of publishers
// older than checksums, and then not sent (evolve.go).
//
// UnusedFrom..UnusedTo, when UnusedFrom is not 0, are numbers below the
// session's first that its publisher skipped when it resumed and never
// sent: the store records them as never published (unless it holds
// them), not as a gap. A publisher sends them on the first frame of each
// connection; 0 in frames of publishers older than the fields.
type Publish struct {
	_msgpack   struct{} `msgpack:",as_array"`
	ReqID      uint64
	Source     string
	FirstSeq   uint64
	Payloads   [][]byte
	Checksums  []uint32
	UnusedFrom uint64
	UnusedTo   uint64
}

// Ack says the group has committed FirstSeq..LastSeq of Source (new or
// already held) and that the stores its intragroup behaviour names hold
// them (Registered.Intragroup): they are stable in this group.
type Ack struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	FirstSeq uint64
	LastSeq  uint64
	HighSeq  uint64
	// Conflicts counts sequence numbers in the range the group already
	// held with a different payload: the held payload was kept. Non-zero
	// means a sequence number was reused.
	Conflicts int
}

// Nak answers a Publish in place of its Ack when the group knows that some
// of the frame's sequence numbers are lost: it does not hold them and never
// will (UM's stability NAK). The frame's other sequence numbers, FirstSeq
// to LastSeq outside Lost, are committed as an Ack would say. Lost ranges
// are ascending, disjoint and inside [FirstSeq, LastSeq]. A publisher stops
// waiting for this group's confirmation of the lost ones and reports them.
// A store sends it for the sequence numbers of a Publish at or below what
// retention released for the source: the group no longer holds them and
// will never store them again.
type Nak struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	FirstSeq uint64
	LastSeq  uint64
	HighSeq  uint64
	Lost     []Range
}

// NotLeader redirects a request that only the leader serves. Leader is the
// leader's client address, empty while no leader is known.
//
// NoLeaderMS, while no leader is known, is how long (in milliseconds) the
// store has heard from none: an election takes about a second, so a group
// whose reachable stores have known no leader for longer has lost its
// majority (a host down or paused), and a client need not wait for it
// (publisher/resume.go). 0 when a leader is known, or from a store older
// than the field.
type NotLeader struct {
	_msgpack   struct{} `msgpack:",as_array"`
	ReqID      uint64
	Leader     string
	LeaderName string
	NoLeaderMS uint64
}

// Fetch asks for the messages of Source held in [From, To], at most
// MaxCount messages or about MaxBytes of payload (0: the store's default).
//
// Local asks the store itself, leader or not, to answer from its own
// repository (Known, HighSeq and LowSeq are then that store's): how a
// store finds an intact copy of a message damaged in its own files among
// the other members of its group. Without Local only the leader answers.
type Fetch struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	From     uint64
	To       uint64
	MaxCount int
	MaxBytes int
	Local    bool
}

// Msg is one stored message. CRC is the payload's CRC32C (Checksum) as the
// store keeps it, 0 if the store has none (a store older than checksums):
// a receiver refuses a payload that does not match it.
type Msg struct {
	_msgpack struct{} `msgpack:",as_array"`
	Seq      uint64
	Payload  []byte
	CRC      uint32
}

// FetchReply answers Fetch: the messages held in [From, Through],
// ascending; a sequence number in that range that is absent is not held by
// the group. Through is the requested To unless a limit cut the reply short.
// Known is false if the group has never seen the source. Released is how
// far the group's retention released the source (every number at or below
// it is gone on purpose, not lost); 0 if never, or from a store older
// than the field.
type FetchReply struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Known    bool
	HighSeq  uint64
	LowSeq   uint64
	Through  uint64
	Msgs     []Msg
	Released uint64
	// Unpublished are the numbers the group does not hold that their
	// publisher declared it never used (Publish.UnusedFrom): never
	// published, not lost. Empty from a store older than the field.
	Unpublished []Range
}

// Probe asks any store (leader or not) what it holds; stores use it before
// deciding to bootstrap a group, operators use it for status.
type Probe struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
}

// ProbeReply answers Probe.
type ProbeReply struct {
	_msgpack     struct{} `msgpack:",as_array"`
	ReqID        uint64
	Store        string
	Group        int
	GroupID      string // identity of the group, empty if the store never saw it
	HasState     bool   // the store has raft state or repository data
	State        string // raft state: Follower, Candidate, Leader, Shutdown, or starting
	Leader       string // leader's client address, if known
	AppliedIndex uint64
	LastIndex    uint64
	LastTerm     uint64          // term of the last log entry
	CatchingUp   bool            // an empty store rejoining its group, not yet caught up
	KnownGroups  []GroupIdentity // identities of other groups this store's group has recorded
	LastStop     string          // how the store stopped before this run: clean, dirty or new; empty from an older store
	// CatchUpTarget and CatchUpBytes say, while CatchingUp, the index the
	// store catches up to and the bytes it has received from its group
	// since it opened (snapshot streams and entry payloads).
	CatchUpTarget uint64
	CatchUpBytes  uint64
}

// GroupIdentity names a group and the identity it was given at bootstrap.
type GroupIdentity struct {
	_msgpack struct{} `msgpack:",as_array"`
	Index    int
	GroupID  string
}

// Range is an inclusive range of sequence numbers.
type Range struct {
	_msgpack struct{} `msgpack:",as_array"`
	From     uint64
	To       uint64
}

// Sources asks a group's leader for the state of the sources it holds, in
// name order, from the first named after After ("" from the first); another
// group's leader uses the answer to find what it misses. The answer holds
// one page (SourceList.Next); a store older than paging answers all of them.
type Sources struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	After    string
}

// SourceState is one source as a group holds it.
type SourceState struct {
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	HighSeq  uint64
	LowSeq   uint64
	Count    uint64
	Gaps     []Range // ranges between LowSeq and HighSeq the group does not hold
	// Released is how far the group's retention released the source
	// (FetchReply.Released); 0 if never, or from a store older than it.
	Released uint64
	// Unpublished are the parts of Gaps declared never published
	// (FetchReply.Unpublished).
	Unpublished []Range
	// Conflicts counts the sequence numbers of the source another group
	// was found to hold with another payload (a consistency violation;
	// receivers get the payload of the lowest group index).
	Conflicts uint64
}

// SourceList answers Sources with one page of the group's sources. Next,
// when not empty, is the After of the request for the next page; "" means
// the list is complete (and from a store older than paging, always).
type SourceList struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Group    int
	GroupID  string
	Sources  []SourceState
	Next     string
}

// Subscribe asks a group's leader to push the messages of Source from
// sequence From on, as the group commits them, until the connection closes.
// The leader answers with Deliver frames carrying the same ReqID.
type Subscribe struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	From     uint64
	Receiver string // names the receiver for consumption records
}

// Deliver pushes messages of a subscription, ascending. Through is the
// highest sequence number the leader has examined: a sequence number up to
// Through that is absent is not held by the group. HighSeq is the source's
// highest sequence number in the group.
type Deliver struct {
	_msgpack    struct{} `msgpack:",as_array"`
	ReqID       uint64
	Source      string
	Through     uint64
	HighSeq     uint64
	LowSeq      uint64
	Msgs        []Msg
	Released    uint64  // as FetchReply.Released
	Unpublished []Range // as FetchReply.Unpublished
}

// Consumed records, through the group's log, that Receiver has consumed
// Source up to Seq. The store answers OK.
type Consumed struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Receiver string
	Seq      uint64
}

// Shutdown asks a store to stop cleanly (graceful stop, marked clean). It is
// an operator's request: a store with an operator token accepts it only
// when Token is that token; one without accepts it from a client that
// presented the deployment's client token or, with no token at all, from
// loopback. Token was added after ReqID, so an older client's Shutdown
// decodes with Token empty (evolve.go).
type Shutdown struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Token    string // the deployment's operator token, if it has one
}

// KeepAlive tells a group's leader that the publisher session holding
// Source is alive (sent when it has nothing to publish), or, with Leaving,
// that it is going away and the source is free. It has no answer.
//
// UnusedFrom..UnusedTo, when UnusedFrom is not 0, are numbers the session
// skipped and never sent, as on a Publish (Publish.UnusedFrom): a
// publisher that has nothing more to publish declares them this way. 0
// from publishers older than the fields.
type KeepAlive struct {
	_msgpack   struct{} `msgpack:",as_array"`
	Source     string
	Session    string
	Leaving    bool
	UnusedFrom uint64
	UnusedTo   uint64
}

// OK acknowledges a request that has no other answer.
type OK struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
}

func (*Hello) Type() Type      { return TypeHello }
func (*Welcome) Type() Type    { return TypeWelcome }
func (*Error) Type() Type      { return TypeError }
func (*Register) Type() Type   { return TypeRegister }
func (*Registered) Type() Type { return TypeRegistered }
func (*Publish) Type() Type    { return TypePublish }
func (*Ack) Type() Type        { return TypeAck }
func (*NotLeader) Type() Type  { return TypeNotLeader }
func (*Fetch) Type() Type      { return TypeFetch }
func (*FetchReply) Type() Type { return TypeFetchReply }
func (*Probe) Type() Type      { return TypeProbe }
func (*ProbeReply) Type() Type { return TypeProbeReply }
func (*Sources) Type() Type    { return TypeSources }
func (*SourceList) Type() Type { return TypeSourceList }
func (*Subscribe) Type() Type  { return TypeSubscribe }
func (*Deliver) Type() Type    { return TypeDeliver }
func (*Consumed) Type() Type   { return TypeConsumed }
func (*OK) Type() Type         { return TypeOK }
func (*Shutdown) Type() Type   { return TypeShutdown }
func (*KeepAlive) Type() Type  { return TypeKeepAlive }
func (*Nak) Type() Type        { return TypeNak }

// newMessage returns an empty message for a frame type, or nil if the type
// is unknown.
func newMessage(t Type) Message {
	switch t {
	case TypeHello:
		return &Hello{}
	case TypeWelcome:
		return &Welcome{}
	case TypeError:
		return &Error{}
	case TypeRegister:
		return &Register{}
	case TypeRegistered:
		return &Registered{}
	case TypePublish:
		return &Publish{}
	case TypeAck:
		return &Ack{}
	case TypeNotLeader:
		return &NotLeader{}
	case TypeFetch:
		return &Fetch{}
	case TypeFetchReply:
		return &FetchReply{}
	case TypeProbe:
		return &Probe{}
	case TypeProbeReply:
		return &ProbeReply{}
	case TypeSources:
		return &Sources{}
	case TypeSourceList:
		return &SourceList{}
	case TypeSubscribe:
		return &Subscribe{}
	case TypeDeliver:
		return &Deliver{}
	case TypeConsumed:
		return &Consumed{}
	case TypeOK:
		return &OK{}
	case TypeShutdown:
		return &Shutdown{}
	case TypeKeepAlive:
		return &KeepAlive{}
	case TypeNak:
		return &Nak{}
	case TypePing:
		return &Ping{}
	case TypePong:
		return &Pong{}
	case TypeRangeDigest:
		return &RangeDigest{}
	case TypeRangeDigestReply:
		return &RangeDigestReply{}
	}
	if m := newMemberMessage(t); m != nil {
		return m
	}
	return newReceiverMessage(t)
}
