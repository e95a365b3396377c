package raftport

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config is what the raft port needs of its store. Package storegroup
// builds it from its own Config in one place (open.go).
type Config struct {
	Name    string   // the store's name, also its raft server ID
	Group   int      // the store's group index, for messages
	Members []Member // the group as configured, this store included

	// Current, if set, returns the group's members where they listen now
	// (the store's address book): a member whose host was replaced is
	// checked against its new host. Nil: the configured Members.
	Current func() []Member
	// Addresses, if set, tells raft's transport where a member listens now
	// (the store's address book), in place of the address in raft's
	// configuration.
	Addresses raft.ServerAddressProvider

	Bind    string // host:port to listen on: the store's raft address
	LocalIP net.IP // outgoing connections leave from it; nil: any

	// ServerTLS and ClientTLS, if set, carry every raft connection over
	// TLS; a ServerTLS with ClientCAs also requires the peer's certificate
	// to be valid for another member's host, and the connection to come
	// from it. MemberSecret, if set, has both ends prove membership with
	// internal/memberauth's handshake.
	ServerTLS    *tls.Config
	ClientTLS    *tls.Config
	MemberSecret []byte

	// Dial, if set, opens the outgoing connections in place of the TCP
	// dialer (tests only; see DialFunc).
	Dial DialFunc

	// HandshakeTimeout bounds how long a peer may take to prove
	// membership; IdleTimeout closes an accepted connection on which
	// nothing arrived for that long. Both must be set (the store applies
	// its defaults).
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration

	Log  *slog.Logger // refusals and the port's own troubles
	HLog hclog.Logger // raft's network transport's logger
	// Refused, if set, counts a connection refused before raft read a byte
	// (umstore_raft_peers_refused_total).
	Refused func(Refusal)
}

// Open listens on the raft port and returns the transport raft is to use:
// raft's network transport over the authenticating stream layer, behind an
// open vote gate.
func Open(cfg Config) (*Transport, error) {
	stream, err := newStreamLayer(streamOptions{
		bind:             cfg.Bind,
		localIP:          cfg.LocalIP,
		serverTLS:        cfg.ServerTLS,
		clientTLS:        cfg.ClientTLS,
		dial:             cfg.Dial,
		auth:             newMemberCheck(cfg),
		log:              cfg.Log,
		refused:          cfg.Refused,
		handshakeTimeout: cfg.HandshakeTimeout,
		idleTimeout:      cfg.IdleTimeout,
	})
	if err != nil {
		return nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  cfg.HLog.Named("transport"),

		ServerAddressProvider: cfg.Addresses,
	})
	gate := &VoteGate{}
	return newGatedTransport(trans, gate, raft.ServerID(cfg.Name), func(cand string, pos Position) {
		_, target := gate.State()
		cfg.Log.Warn("refused a vote: this store rejoined empty and has not caught up; the candidate's log does not reach the group's last entry", "candidate", cand, "candidate_log", pos.String(), "target", target.String())
	}), nil
}

// Transport is what raft uses of the raft port: raft's network transport
// over the stream layer (stream.go), with the vote gate in front of the
// RPCs it delivers to raft, and the members' answers recorded on their way
// back (progress.go). Embedding keeps every other method of the transport
// (pre-vote, close, pipelining) so raft still detects them.
type Transport struct {
	*raft.NetworkTransport
	gate    *VoteGate
	localID raft.ServerID
	out     chan raft.RPC
	done    chan struct{}
	once    sync.Once
	refused func(candidate string, cand Position)
	members *Progress                  // the members' answers, for the intragroup rule (progress.go); nil: not recorded
	entries atomic.Pointer[EntryCheck] // checks the entries sent and received (entrycheck.go); nil: none
}

// raft finds pre-vote and Close through these interfaces (RAFT-NOTES.md): a
// wrapper that lost them would silently turn pre-vote off, or leave the
// network transport open when raft shuts down.
var (
	_ raft.WithPreVote = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
)

func newGatedTransport(t *raft.NetworkTransport, gate *VoteGate, localID raft.ServerID, refused func(string, Position)) *Transport {
	g := &Transport{NetworkTransport: t, gate: gate, localID: localID, out: make(chan raft.RPC), done: make(chan struct{}), refused: refused}
	go g.filter()
	return g
}

// Gate is the vote gate in front of the transport.
func (g *Transport) Gate() *VoteGate { return g.gate }

// RecordAnswers has the transport hand every member's answer to
// AppendEntries and InstallSnapshot to p before raft sees it. It must be
// called before raft starts.
func (g *Transport) RecordAnswers(p *Progress) { g.members = p }

// Close implements raft.WithClose and stops the filter.
func (g *Transport) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.NetworkTransport.Close()
}
