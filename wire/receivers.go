package wire

// Frames of durable receivers, receiver-paced persistence and confirmed
// delivery. They are new frame types rather than new fields of older
// frames: an array-encoded frame's fields are its format, and a peer that
// does not know a type answers it with an Error (CodeUnknown), which the
// newer side can tell from a refusal.
const (
	TypeRegisterReceiver   Type = 22
	TypeReceiverRegistered Type = 23
	TypeConsumedAs         Type = 24
	TypeReceiverQuery      Type = 25
	TypeReceiverReport     Type = 26
	TypeRegisterSource     Type = 27
	TypeDelivery           Type = 28
	TypeHeldBack           Type = 29
)

// Pacing modes a publisher asks for in RegisterSource, and a source shows
// in ReceiverRegistered and SourceReceivers: the names of
// repository.Pacing.
const (
	PacingNone        = ""
	PacingBlocking    = "blocking"
	PacingNonBlocking = "non-blocking"
)

// RegisterReceiver registers the receiver named Receiver with Source at a
// group's leader, for the receiver instance Session (UM's receiver RegID /
// session ID). The leader refuses it with CodeBusy while another session
// of the same name was heard from within the receiver activity timeout;
// otherwise it records the registration through the group's log and
// answers ReceiverRegistered with the receiver's recorded position.
type RegisterReceiver struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Receiver string
	Session  string
	Paced    bool // the receiver paces the source (UM ume_receiver_paced_persistence)
}

// ReceiverRegistered answers RegisterReceiver.
type ReceiverRegistered struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Receiver string
	Group    int
	GroupID  string
	Known    bool   // the group holds the source; when false nothing was recorded
	Recorded bool   // the group had a record of the receiver: Consumed is its position
	Consumed uint64 // the last sequence number the receiver consumed, as the group recorded it; 0 if none
	HighSeq  uint64
	LowSeq   uint64
	Pacing   string // the source's pacing: PacingNone, PacingBlocking or PacingNonBlocking
}

// ConsumedAs acknowledges, for the receiver instance Session, that Receiver
// consumed Source up to Seq; it doubles as the receiver's keep-alive (UM's
// proactive keep-alive resends the last acknowledgement). The leader answers
// OK, recording the position through the log only when it moves forward; an
// Error with CodeNotRegistered when the session does not hold the name
// (register again), CodeBusy when another session does. With Leaving the
// receiver is closing: the name is free at once.
type ConsumedAs struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Receiver string
	Session  string
	Seq      uint64 // 0: nothing consumed yet (a keep-alive only)
	Leaving  bool
}

// ReceiverQuery asks any store (leader or not) what its own repository
// records about the receivers of Source ("" for every source) named
// Receiver ("" for all of them). It is answered from the store's applied
// state, which on a follower may lag the group's.
type ReceiverQuery struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Receiver string
}

// ReceiverReport answers ReceiverQuery.
type ReceiverReport struct {
	_msgpack     struct{} `msgpack:",as_array"`
	ReqID        uint64
	Store        string
	Group        int
	Leader       bool   // the store leads its group: last activity is the leader's own
	AppliedIndex uint64 // how far the store's repository is
	Sources      []SourceReceivers
}

// SourceReceivers is what a store records about the receivers of one
// source.
type SourceReceivers struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Source    string
	HighSeq   uint64
	Pacing    string
	Receivers []ReceiverState
}

// ReceiverState is one named receiver of a source.
type ReceiverState struct {
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	Consumed uint64 // last sequence number consumed; 0 if none yet
	Paced    bool
	Active   bool // registered and not expired since
	// LastActivityUnixNano is when the receiver was last heard from: by the
	// leader (from its memory) when the answering store leads, else the
	// latest time the log recorded for it (registration or position).
	LastActivityUnixNano int64
}

// RegisterSource is Register with the options of receiver-paced
// persistence, confirmed delivery and intragroup stability; the store
// answers Registered, as for Register. A publisher sends it only when it
// uses one of them, so it still registers with stores that do not know the
// frame.
type RegisterSource struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Session  string
	// Pacing asks for receiver-paced persistence (UM
	// ume_receiver_paced_persistence); the store refuses it with
	// CodeBadRequest unless it allows it
	// (repository-allow-receiver-paced-persistence).
	Pacing string
	// Delivery asks the leader to push the source's receivers' positions on
	// this connection (Delivery frames), for confirmed delivery.
	Delivery bool
	// Intragroup asks for an intragroup stability behaviour for this
	// connection's Publish frames of Source (UM's source option
	// ume_retention_intragroup_stability_behavior): "quorum", "all-active"
	// or "all"; empty asks nothing. The group applies the stricter of it and
	// the deployment's, and says which in Registered.Intragroup; a name it
	// does not know is refused (CodeBadRequest).
	Intragroup string
}

// Delivery tells a publisher that registered with Delivery how far the
// named receivers of Source have consumed it, as the group recorded. The
// leader pushes it when positions change; it has no answer.
type Delivery struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Source    string
	Receivers []ReceiverState
}

// HeldBack tells a publisher that the leader holds it back, and why
// (Reason, for people): with blocking receiver-paced persistence, the
// source's repository is at its retention limit with messages an active
// paced receiver has not consumed, and its Publish frames wait; under an
// intragroup behaviour of all-active or all, acknowledgements wait for
// stores of the group that do not hold the messages yet (or, under all,
// are down). The leader repeats it every second while it waits; it has no
// answer, and it shows the leader is alive.
type HeldBack struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Reason   string
}

func (*RegisterReceiver) Type() Type   { return TypeRegisterReceiver }
func (*ReceiverRegistered) Type() Type { return TypeReceiverRegistered }
func (*ConsumedAs) Type() Type         { return TypeConsumedAs }
func (*ReceiverQuery) Type() Type      { return TypeReceiverQuery }
func (*ReceiverReport) Type() Type     { return TypeReceiverReport }
func (*RegisterSource) Type() Type     { return TypeRegisterSource }
func (*Delivery) Type() Type           { return TypeDelivery }
func (*HeldBack) Type() Type           { return TypeHeldBack }

// newReceiverMessage returns an empty message for a frame type of this
// file, or nil.
func newReceiverMessage(t Type) Message {
	switch t {
	case TypeRegisterReceiver:
		return &RegisterReceiver{}
	case TypeReceiverRegistered:
		return &ReceiverRegistered{}
	case TypeConsumedAs:
		return &ConsumedAs{}
	case TypeReceiverQuery:
		return &ReceiverQuery{}
	case TypeReceiverReport:
		return &ReceiverReport{}
	case TypeRegisterSource:
		return &RegisterSource{}
	case TypeDelivery:
		return &Delivery{}
	case TypeHeldBack:
		return &HeldBack{}
	}
	return nil
}
