package storegroup

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"umstore/internal/memberauth"
	"umstore/storegroup/raftport"
	"umstore/wire"
)

// A member's move: a store that listens elsewhere than its group last knew
// (its host was replaced by a server at another address) tells the other
// members, and each decides whether to believe it.
//
// The request (wire.MemberMove) comes over the client port, so a member
// with no raft running can answer it, and proves with the deployment's
// member secret that it comes from a member (memberauth's requests): the
// client token alone never moves a member, since a stranger who could
// would take the member over. Once proven, the receiving store accepts
// the new addresses only if
//
//  1. the request comes from the new raft address's host;
//  2. no other member listens there;
//  3. a store answers there, as that member; and
//  4. nothing answers as that member where the group knew it, nor where the
//     receiving store's deployment file places it: never two live
//     incarnations of one store.
//
// It then routes to the new addresses at once (its address book, members_book.go)
// and, when it leads, records them through the log (MemberAddress) and in
// raft's configuration (members_duties.go). A member that does not lead
// keeps the move in memory until the log records it: in a group without a
// quorum there is no leader, and the member with state must reach the
// moved member's new incarnation to be elected by its vote.
//
// The moved store is empty (a replaced server has no state) or carries its
// state with it (a disk moved across). Either way it starts as any store
// does: an empty one joins through the staged join behind the vote gate
// (start.go, raftport's votegate.go), so its vote never counts before it
// has caught up. Its old incarnation is fenced off: the raft port refuses
// connections claiming a moved member from anywhere but its new host
// (raftport's auth.go).

// Why a move may be refused, for logs and the MemberMoved verdict.
const (
	moveRefusedNoSecret = "the deployment has no member secret, so no store can prove it is a member: a member's address cannot change (add one with `umstored plan --add-member-secret`)"
	moveRefusedProof    = "the request does not prove membership (another member secret, or not a store of this deployment)"
)

// bindingMoveLabel exports the TLS keying material a move's proofs are
// bound to.
const bindingMoveLabel = "EXPORTER-umstore-member-request-v1"

// moveChallenge is a connection's MemberMove in progress: the nonce the
// store answered the first round with.
type moveChallenge struct {
	dialerNonce, acceptorNonce []byte
	body                       []byte
}

// memberDesk answers other stores' questions about the group's members:
// Members (where each listens) and MemberMove. The client server hands it
// those frames (package clientserver, through client.go).
type memberDesk struct {
	name   string
	group  int
	secret []byte
	book   *memberBook
	log    *slog.Logger

	groupID  func() string
	isLeader func() bool
	// probe asks the store at a client address what it holds.
	probe func(ctx context.Context, addr string) (*wire.ProbeReply, error)
	// record writes an accepted move into the group's log (leader only).
	record func(ctx context.Context, m Member) error
	lookup func(ctx context.Context, host string) ([]net.IPAddr, error)
}

// memberDesk builds the store's desk.
func (s *Store) memberDesk() *memberDesk {
	return &memberDesk{
		name:     s.cfg.Name,
		group:    s.cfg.Group,
		secret:   s.cfg.Security.MemberSecret,
		book:     s.addressBook(),
		log:      s.log,
		groupID:  s.repo.GroupID,
		isLeader: s.IsLeader,
		probe: func(ctx context.Context, addr string) (*wire.ProbeReply, error) {
			return ProbeStore(ctx, addr, s.dialer(time.Second))
		},
		record: s.recordMember,
		lookup: net.DefaultResolver.LookupIPAddr,
	}
}

// members answers Members.
func (d *memberDesk) members(reqID uint64) *wire.MemberList {
	return &wire.MemberList{ReqID: reqID, Store: d.name, Group: d.group, GroupID: d.groupID(), Members: d.book.list()}
}

// move answers one round of a MemberMove on a connection; pending is the
// connection's challenge, if one was issued.
func (d *memberDesk) move(ctx context.Context, m *wire.MemberMove, nc net.Conn, pending **moveChallenge) wire.Message {
	want := Member{Name: m.Store, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr}
	unproven := func(verdict, reason string, durable bool) *wire.MemberMoved {
		return &wire.MemberMoved{ReqID: m.ReqID, Store: d.name, Verdict: verdict, Reason: reason, Recorded: durable}
	}
	if _, ok := d.book.fileMember(want.Name); !ok || want.Name == d.name {
		return unproven(wire.MoveRefused, fmt.Sprintf("%q is not another member of group %d", want.Name, d.group), false)
	}
	if want.RaftAddr == "" || want.ClientAddr == "" {
		return &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: "a MemberMove needs both addresses"}
	}
	if d.secret == nil {
		// Nothing to prove with: a move can only be confirmed, never made.
		if cur, _ := d.book.member(want.Name); cur == want {
			return unproven(wire.MoveKnown, "", d.book.durable(want))
		}
		return unproven(wire.MoveRefused, moveRefusedNoSecret, false)
	}
	body := wire.MemberMoveBody(want.Name, want.RaftAddr, want.ClientAddr)
	ch := *pending
	if len(m.AcceptorNonce) != 0 && ch == nil {
		// A proof for a challenge this connection no longer has: used
		// already, or issued on another connection (a replay).
		d.log.Warn("refused a member's new address: "+moveRefusedProof, "member", want.Name, "raft_addr", want.RaftAddr, "client_addr", want.ClientAddr, "remote", nc.RemoteAddr().String())
		return unproven(wire.MoveRefused, moveRefusedProof, false)
	}
	if ch == nil {
		if len(m.Nonce) != memberauth.NonceSize {
			return &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: fmt.Sprintf("a MemberMove carries a nonce of %d bytes", memberauth.NonceSize)}
		}
		*pending = &moveChallenge{dialerNonce: bytes.Clone(m.Nonce), acceptorNonce: memberauth.NewNonce(), body: body}
		return &wire.MemberChallenge{ReqID: m.ReqID, Store: d.name, Nonce: (*pending).acceptorNonce}
	}
	*pending = nil // a challenge answers one request
	q := memberauth.Request{Dialer: want.Name, Acceptor: d.name, DialerNonce: ch.dialerNonce, AcceptorNonce: ch.acceptorNonce, Body: ch.body, Binding: moveBinding(nc)}
	var v *wire.MemberMoved
	if !bytes.Equal(m.AcceptorNonce, ch.acceptorNonce) || !bytes.Equal(m.Nonce, ch.dialerNonce) || !bytes.Equal(body, ch.body) ||
		!memberauth.ProofsEqual(m.Proof, q.DialerProof(d.secret)) {
		d.log.Warn("refused a member's new address: "+moveRefusedProof, "member", want.Name, "raft_addr", want.RaftAddr, "client_addr", want.ClientAddr, "remote", nc.RemoteAddr().String())
		v = unproven(wire.MoveRefused, moveRefusedProof, false)
	} else {
		v = d.decide(ctx, want, nc.RemoteAddr())
		v.ReqID = m.ReqID
	}
	v.Proof = q.AcceptorProof(d.secret, wire.MemberMovedVerdict(v))
	return v
}

// decide checks a proven move and accepts it, or says why not.
func (d *memberDesk) decide(ctx context.Context, want Member, remote net.Addr) *wire.MemberMoved {
	v := &wire.MemberMoved{Store: d.name}
	refuse := func(format string, args ...any) *wire.MemberMoved {
		v.Verdict, v.Reason = wire.MoveRefused, fmt.Sprintf(format, args...)
		d.log.Warn("refused a member's new address", "member", want.Name, "raft_addr", want.RaftAddr, "client_addr", want.ClientAddr, "why", v.Reason)
		return v
	}
	cur, _ := d.book.member(want.Name)
	if cur == want {
		v.Verdict = wire.MoveKnown
		if !d.book.durable(want) && d.isLeader() {
			if err := d.record(ctx, want); err == nil {
				v.Recorded = true
			}
		}
		v.Recorded = v.Recorded || d.book.durable(want)
		return v
	}
	ip := net.ParseIP(raftport.RemoteIP(remote))
	if !hostResolvesTo(ctx, d.lookup, raftport.HostOf(want.RaftAddr), ip) {
		return refuse("the request comes from %s, not from the host of the new raft address %s", raftport.RemoteIP(remote), want.RaftAddr)
	}
	for _, o := range d.book.members() {
		if o.Name != want.Name && (o.RaftAddr == want.RaftAddr || o.ClientAddr == want.ClientAddr) {
			return refuse("member %s listens at %s / %s", o.Name, o.RaftAddr, o.ClientAddr)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	rep, err := d.probe(pctx, want.ClientAddr)
	cancel()
	switch {
	case err != nil:
		return refuse("nothing answers at the new client address %s: %v", want.ClientAddr, err)
	case rep.Store != want.Name:
		return refuse("the store at the new client address %s is %q, not %s", want.ClientAddr, rep.Store, want.Name)
	}
	file, _ := d.book.fileMember(want.Name)
	olds := []string{cur.ClientAddr}
	if file.ClientAddr != cur.ClientAddr {
		olds = append(olds, file.ClientAddr)
	}
	for _, old := range olds {
		if old == want.ClientAddr {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rep, err := d.probe(pctx, old)
		cancel()
		if err == nil && rep.Store == want.Name {
			state := "empty"
			if rep.HasState {
				state = "with state"
			}
			return refuse("%s still answers at %s (%s, raft %s): two live incarnations of one store would corrupt its group; stop the old one first", want.Name, old, state, rep.State)
		}
	}
	d.book.accept(want)
	v.Verdict = wire.MoveAccepted
	d.log.Warn("a member of the group moved: using its new addresses (its old incarnation does not answer)", "member", want.Name, "raft_addr", want.RaftAddr, "client_addr", want.ClientAddr, "was", cur.ClientAddr)
	if d.isLeader() {
		if err := d.record(ctx, want); err != nil {
			d.log.Warn("could not record the member's new addresses in the group's log yet; the leader retries", "member", want.Name, "err", err)
		}
	}
	v.Recorded = d.book.durable(want)
	return v
}

// hostResolvesTo reports whether host (an IP address or a name) has ip.
func hostResolvesTo(ctx context.Context, lookup func(context.Context, string) ([]net.IPAddr, error), host string, ip net.IP) bool {
	return raftport.HostHas(ctx, lookup, host, ip)
}

// moveBinding is the keying material a move's proofs are bound to: the TLS
// session's, or none without TLS.
func moveBinding(nc net.Conn) []byte {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	b, err := st.ExportKeyingMaterial(bindingMoveLabel, nil, raftport.BindingSize)
	if err != nil {
		return nil
	}
	return b
}

// tellMove tells member p where this store listens, and returns p's
// verdict, proven when this store has a member secret. A store older than
// moves (it does not know the frame) cannot have moved anyone: its answer
// counts as a durable "known".
func (s *Store) tellMove(ctx context.Context, p Member) (*wire.MemberMoved, error) {
	c, _, err := s.dialer(2*time.Second).Dial(ctx, p.ClientAddr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	self := s.cfg.self()
	nonce := memberauth.NewNonce()
	req := &wire.MemberMove{ReqID: 1, Store: self.Name, RaftAddr: self.RaftAddr, ClientAddr: self.ClientAddr, Nonce: nonce}
	if err := c.Send(req); err != nil {
		return nil, err
	}
	first, err := c.Read()
	if err != nil {
		return nil, err
	}
	secret := s.cfg.Security.MemberSecret
	switch m := first.(type) {
	case *wire.Error:
		if m.Code == wire.CodeUnknown {
			return &wire.MemberMoved{Store: p.Name, Verdict: wire.MoveKnown, Recorded: true}, nil
		}
		return nil, m
	case *wire.MemberMoved:
		if secret != nil {
			return nil, fmt.Errorf("%s answered a move without proving it holds the member secret", p.Name)
		}
		return m, nil
	case *wire.MemberChallenge:
		if secret == nil {
			return nil, fmt.Errorf("%s holds a member secret and this store none: check that every host has the same deployment file", p.Name)
		}
		if m.Store != p.Name || len(m.Nonce) != memberauth.NonceSize {
			return nil, fmt.Errorf("%w: the store at %s answered a move as %q", wire.ErrMalformed, p.ClientAddr, m.Store)
		}
		q := memberauth.Request{Dialer: self.Name, Acceptor: p.Name, DialerNonce: nonce, AcceptorNonce: m.Nonce,
			Body: wire.MemberMoveBody(self.Name, self.RaftAddr, self.ClientAddr), Binding: moveBinding(c.NetConn())}
		req.ReqID, req.AcceptorNonce, req.Proof = 2, m.Nonce, q.DialerProof(secret)
		if err := c.Send(req); err != nil {
			return nil, err
		}
		second, err := c.Read()
		if err != nil {
			return nil, err
		}
		v, ok := second.(*wire.MemberMoved)
		if !ok {
			if e, isErr := second.(*wire.Error); isErr {
				return nil, e
			}
			return nil, fmt.Errorf("%w: a move answered with frame type %d", wire.ErrMalformed, second.Type())
		}
		if v.Store != p.Name || !memberauth.ProofsEqual(v.Proof, q.AcceptorProof(secret, wire.MemberMovedVerdict(v))) {
			return nil, fmt.Errorf("the answer from %s to this store's move does not prove it holds the member secret", p.ClientAddr)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: a move answered with frame type %d", wire.ErrMalformed, first.Type())
}
