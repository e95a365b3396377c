package wire

// Ping asks a store whether it is alive and whether it leads its group.
// Every store answers, leader or not, with a Pong, at once and without
// touching its repository, so a client can use it three ways: to find its
// group's leader quickly (ask every member at once, take the one that says
// it leads), as a keep-alive with an answer (a paused store accepts TCP
// connections but never answers), and to learn the deployment's shape and
// the policy the store runs.
type Ping struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
}

// Pong answers Ping.
type Pong struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Store    string
	Group    int
	// Groups is how many groups the store's deployment has: a client given
	// fewer groups' stores publishes into part of the deployment only.
	Groups int
	// Leading is true when the store leads its group and serves requests.
	Leading bool
	// Leader is the leader's client address as the store knows it ("" if
	// none is known); LeaderName is its name.
	Leader     string
	LeaderName string
	// AppliedIndex and LastIndex are the store's raft positions; CatchingUp
	// is true while it rejoins empty and has not caught up.
	AppliedIndex uint64
	LastIndex    uint64
	CatchingUp   bool
	// PolicyDigest and Policy are the policy the store runs (placement's
	// Policy.Digest and Policy.Canonical), "" when it was given none.
	PolicyDigest string
	Policy       string
	// FormatLevel is the format level the store's binary reads
	// (repository.FormatLevel): the leader raises its group's active level
	// only once every member announced at least that level. 0 from a store
	// older than the field, which reads level 1. ActiveLevel is the group's
	// active level as the store applied it (0 from an older store).
	// Version is the build of the store's binary (internal/version), ""
	// from an older store.
	FormatLevel uint64
	ActiveLevel uint64
	Version     string
}

// RangeDigest asks a group's leader for a digest of the messages of Source
// it holds in [From, To], at most MaxCount of them (0: the store's limit):
// two groups that hold the same sequence numbers must hold the same
// payloads, and comparing digests checks it without copying the messages.
type RangeDigest struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	From     uint64
	To       uint64
	MaxCount int
}

// RangeDigestReply answers RangeDigest: Count messages held in [From,
// Through] hash to Sum (SHA-256 over each message's sequence number and
// payload, in order). Through is the request's To unless MaxCount cut the
// range short. Known is false if the group has never seen the source.
type RangeDigestReply struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Source   string
	Known    bool
	Through  uint64
	Count    uint64
	Sum      []byte
}

func (*Ping) Type() Type             { return TypePing }
func (*Pong) Type() Type             { return TypePong }
func (*RangeDigest) Type() Type      { return TypeRangeDigest }
func (*RangeDigestReply) Type() Type { return TypeRangeDigestReply }
