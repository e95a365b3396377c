package wire

// A request's ReqID is the client's: a store copies it into the answer, so
// the client matches answers to requests. These let code that carries
// frames without knowing their types (a connection shared by many
// sessions, internal/connmux) read and set it.

// numbered is a frame that carries a ReqID.
type numbered interface {
	Message
	reqID() *uint64
}

// ReqIDOf returns m's ReqID, and false for a frame type that has none
// (Hello, KeepAlive, HeldBack, Delivery, ...).
func ReqIDOf(m Message) (uint64, bool) {
	n, ok := m.(numbered)
	if !ok {
		return 0, false
	}
	return *n.reqID(), true
}

// SetReqID sets m's ReqID, and reports false (changing nothing) for a
// frame type that has none.
func SetReqID(m Message, id uint64) bool {
	n, ok := m.(numbered)
	if ok {
		*n.reqID() = id
	}
	return ok
}

func (m *Members) reqID() *uint64            { return &m.ReqID }
func (m *MemberList) reqID() *uint64         { return &m.ReqID }
func (m *MemberMove) reqID() *uint64         { return &m.ReqID }
func (m *MemberChallenge) reqID() *uint64    { return &m.ReqID }
func (m *MemberMoved) reqID() *uint64        { return &m.ReqID }
func (m *Backup) reqID() *uint64             { return &m.ReqID }
func (m *BackupChunk) reqID() *uint64        { return &m.ReqID }
func (m *Error) reqID() *uint64              { return &m.ReqID }
func (m *Register) reqID() *uint64           { return &m.ReqID }
func (m *Registered) reqID() *uint64         { return &m.ReqID }
func (m *Publish) reqID() *uint64            { return &m.ReqID }
func (m *Ack) reqID() *uint64                { return &m.ReqID }
func (m *Nak) reqID() *uint64                { return &m.ReqID }
func (m *NotLeader) reqID() *uint64          { return &m.ReqID }
func (m *Fetch) reqID() *uint64              { return &m.ReqID }
func (m *FetchReply) reqID() *uint64         { return &m.ReqID }
func (m *Probe) reqID() *uint64              { return &m.ReqID }
func (m *ProbeReply) reqID() *uint64         { return &m.ReqID }
func (m *Sources) reqID() *uint64            { return &m.ReqID }
func (m *SourceList) reqID() *uint64         { return &m.ReqID }
func (m *Subscribe) reqID() *uint64          { return &m.ReqID }
func (m *Deliver) reqID() *uint64            { return &m.ReqID }
func (m *Consumed) reqID() *uint64           { return &m.ReqID }
func (m *Shutdown) reqID() *uint64           { return &m.ReqID }
func (m *OK) reqID() *uint64                 { return &m.ReqID }
func (m *Ping) reqID() *uint64               { return &m.ReqID }
func (m *Pong) reqID() *uint64               { return &m.ReqID }
func (m *RangeDigest) reqID() *uint64        { return &m.ReqID }
func (m *RangeDigestReply) reqID() *uint64   { return &m.ReqID }
func (m *RegisterReceiver) reqID() *uint64   { return &m.ReqID }
func (m *ReceiverRegistered) reqID() *uint64 { return &m.ReqID }
func (m *ConsumedAs) reqID() *uint64         { return &m.ReqID }
func (m *ReceiverQuery) reqID() *uint64      { return &m.ReqID }
func (m *ReceiverReport) reqID() *uint64     { return &m.ReqID }
func (m *RegisterSource) reqID() *uint64     { return &m.ReqID }
