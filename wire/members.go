package wire

import "encoding/binary"

// Frames of member addresses: where each store of a group listens now, and
// a store telling its group that it listens somewhere else (a host replaced
// by a server at another address). Any store answers Members; MemberMove
// is a member's request, authenticated by the deployment's member secret
// (internal/memberauth's requests), never by the client token alone.
const (
	TypeMembers         Type = 40
	TypeMemberList      Type = 41
	TypeMemberMove      Type = 42
	TypeMemberChallenge Type = 43
	TypeMemberMoved     Type = 44
)

// Members asks a store where the members of its group listen now.
type Members struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
}

// MemberAddr is one store and where it listens.
type MemberAddr struct {
	_msgpack   struct{} `msgpack:",as_array"`
	Name       string
	RaftAddr   string
	ClientAddr string
	// Moved: the address is not the one the answering store's deployment
	// file gives (the group recorded a move, or the store accepted one).
	Moved bool
	// Recorded: the address comes from the group's log (every member
	// applies it), not from the file or a member's word alone.
	Recorded bool
}

// MemberList answers Members: every member of the store's group, in the
// deployment's order.
type MemberList struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Store    string
	Group    int
	GroupID  string
	Members  []MemberAddr
}

// MemberMove is a store telling another member of its group that it now
// listens at RaftAddr and ClientAddr. The first MemberMove on a
// connection carries the dialer's Nonce and no Proof; the store answers
// with a MemberChallenge, and the dialer sends the same request again with
// the challenge's nonce in AcceptorNonce and its Proof
// (memberauth.Request.DialerProof over MemberMoveBody). The store answers
// MemberMoved.
type MemberMove struct {
	_msgpack      struct{} `msgpack:",as_array"`
	ReqID         uint64
	Store         string // the member that moved: the dialer
	RaftAddr      string
	ClientAddr    string
	Nonce         []byte // the dialer's nonce
	AcceptorNonce []byte // the challenge's nonce; empty in the first round
	Proof         []byte
}

// MemberChallenge is a store's challenge to a MemberMove.
type MemberChallenge struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Store    string // the answering store
	Nonce    []byte
}

// Verdicts of MemberMoved.
const (
	MoveKnown    = "known"    // the store already had these addresses
	MoveAccepted = "accepted" // the store now uses them (a leader also records them in the group's log)
	MoveRefused  = "refused"  // see Reason
)

// MemberMoved is a store's verdict on a MemberMove, with its proof
// (memberauth.Request.AcceptorProof over the verdict).
type MemberMoved struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Store    string
	Verdict  string
	Reason   string
	Recorded bool // the group's log holds the new addresses
	Proof    []byte
}

// MemberMoveBody is the canonical form of a move that both proofs cover:
// the member and its two addresses, length-prefixed.
func MemberMoveBody(store, raftAddr, clientAddr string) []byte {
	var b []byte
	for _, s := range []string{store, raftAddr, clientAddr} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}

// MemberMovedVerdict is the canonical form of a verdict that the
// acceptor's proof covers.
func MemberMovedVerdict(m *MemberMoved) []byte {
	rec := byte(0)
	if m.Recorded {
		rec = 1
	}
	b := MemberMoveBody(m.Store, m.Verdict, m.Reason)
	return append(b, rec)
}

func (*Members) Type() Type         { return TypeMembers }
func (*MemberList) Type() Type      { return TypeMemberList }
func (*MemberMove) Type() Type      { return TypeMemberMove }
func (*MemberChallenge) Type() Type { return TypeMemberChallenge }
func (*MemberMoved) Type() Type     { return TypeMemberMoved }

// newMemberMessage returns an empty message for a frame type of this file,
// or nil.
func newMemberMessage(t Type) Message {
	switch t {
	case TypeMembers:
		return &Members{}
	case TypeMemberList:
		return &MemberList{}
	case TypeMemberMove:
		return &MemberMove{}
	case TypeMemberChallenge:
		return &MemberChallenge{}
	case TypeMemberMoved:
		return &MemberMoved{}
	}
	return nil
}
