package clientserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"umstore/internal/clientperm"
	"umstore/repository"
	"umstore/storegroup/proposal"
	"umstore/storegroup/stagetime"
	"umstore/wire"
)

// Deps is what the client server needs from its store, and all it may
// touch of it. The store builds it in one place (storegroup's client.go).
type Deps struct {
	Name          string // the store's name
	Group         int    // the store's group index
	MaxFrame      int    // Config.MaxFrame
	Token         string // the deployment's token; "" admits every client
	OperatorToken string // the operators' token for Shutdown; "" when none
	// Identities, when set, are the deployment's client identities: each
	// connection is named one at its Hello (or by Token, the deployment's
	// own, which may do everything), and its requests are checked against
	// it (permissions.go). nil: Token alone admits, to everything.
	Identities      *clientperm.Set
	ActivityTimeout time.Duration // Config.SourceActivityTimeout
	Limits          Limits        // Config.ClientLimits, defaults filled in by New

	Log      *slog.Logger
	Metrics  *Metrics
	Stages   *stagetime.Timer   // times queued, answer and total of each Publish; nil times nothing
	Repo     *repository.Repo   // read only: every write is a proposal
	Proposer *proposal.Proposer // every write goes through it

	// Read reads the messages of source in [from, to], at most count and
	// bytes; every message served is read through it, so that one damaged
	// at rest is never served (heal: look for an intact copy at once).
	Read func(ctx context.Context, source string, from, to uint64, count, bytes int, heal bool) ([]repository.Message, error)

	// ClaimSource lets session register on source unless another live
	// session holds it: the leader's view of which publisher holds a
	// source. Taking over from a silent session, or from an earlier
	// incarnation of the same publisher, it first frees the source from
	// that session through the log. Its error wraps ErrFenced when a later
	// incarnation of the publisher holds the source, ErrEpochAhead when the
	// session's epoch is further ahead of now than the stores allow,
	// ErrOverLimit when the leader holds MaxSessions sources.
	ClaimSource func(source, session string, now time.Time, timeout time.Duration) error
	// TouchSource records activity of session on source, if it holds it.
	TouchSource func(source, session string, now time.Time)
	// PeerHigh returns the highest sequence number of source another group
	// was last seen to hold (by the leader's intergroup repair); 0 if none
	// was seen. A Publish may open a gap only so far past it (seqjump.go).
	// nil: the other groups are not asked.
	PeerHigh func(source string) uint64

	// Receivers (receivers.go): the leader's view of receiver sessions,
	// Config.ReceiverActivityTimeout, whether publishers may ask for
	// receiver-paced persistence, and the hold on paced publishers.
	Receivers       Receivers
	ReceiverTimeout time.Duration
	AllowPaced      bool
	Pacer           *Pacer

	Intragroup Intragroup // the members a Publish answer waits for (intragroup.go)

	IsLeader func() bool           // leads and has applied everything committed before its term
	Leader   func() (Member, bool) // the current leader, if known
	// LeaderlessFor is how long the store has known no leader (0 while it
	// knows one): redirects carry it (wire.NotLeader.NoLeaderMS). nil: 0.
	LeaderlessFor func() time.Duration
	Status        func() Status                     // the store's status, for probes
	NextApplied   func() <-chan struct{}            // closed at the next applied batch
	Expire        func(source, session, why string) // frees a source through the log
	Stop          func() error                      // stops the store (an operator's Shutdown)
	Pong          func(reqID uint64) *wire.Pong     // answers a Ping; nil: a bare Pong
	// Snapshot takes a consistent copy of the repository for an operator's
	// Backup (backup.go); nil: the store takes no backups.
	Snapshot func() (*repository.Snapshot, error)
	Members  MemberDesk // Members and MemberMove; nil: refused
	// Conflicts counts the sequence numbers of source another group was
	// found to hold with another payload (storegroup's repair); nil: none.
	Conflicts func(source string) uint64
}

// ErrFenced refuses a registration from an earlier incarnation of a
// publisher while a later one holds the source (answered CodeFenced).
var ErrFenced = errors.New("fenced")

// ErrOverLimit refuses a registration the store cannot hold more of:
// answered CodeUnavailable, as registrations over the client server's own
// limits are. OverLimit makes such an error.
var ErrOverLimit = errors.New("over a limit")

// OverLimit returns an error wrapping ErrOverLimit whose text is msg
// alone: the refusal's words, naming the limit and what to do.
func OverLimit(msg string) error { return overLimitError(msg) }

type overLimitError string

func (e overLimitError) Error() string { return string(e) }
func (e overLimitError) Unwrap() error { return ErrOverLimit }

// ErrEpochAhead refuses a registration whose session names an epoch
// further ahead of the leader's clock than a publisher's could be
// (answered CodeBadRequest): the stores decide how far an epoch may go.
var ErrEpochAhead = errors.New("epoch too far ahead")

// Member is a member of the group as a redirect names it.
type Member struct {
	Name       string
	ClientAddr string
}

// Status is what a Probe answers of the store.
type Status struct {
	Name         string
	Group        int
	GroupID      string
	HasState     bool
	State        string
	AppliedIndex uint64
	LastIndex    uint64
	LastTerm     uint64
	CatchingUp   bool
	LastStop     string // how the store stopped before this run
	// CatchUpTarget and CatchUpBytes: a catching-up store's progress.
	CatchUpTarget uint64
	CatchUpBytes  uint64
}

// Receivers is the leader's view of which receiver instance (session)
// holds each receiver name of a source, and when it was last heard from.
type Receivers interface {
	// Claim lets session register as receiver of source unless another
	// session holds the name and was heard from within timeout.
	Claim(source, receiver, session string, now time.Time, timeout time.Duration) error
	// Touch records activity of session, if it holds the name, and says
	// who holds it.
	Touch(source, receiver, session string, now time.Time) Holder
	// Leave frees the name for a new instance if session holds it.
	Leave(source, receiver, session string)
	// LastHeard returns when the holder of the name was last heard from.
	LastHeard(source, receiver string) (time.Time, bool)
}

// Holder says who holds a receiver name: the session asking (now
// touched), another live one, or nobody (never registered with this
// leader, expired, or left).
type Holder int

// Who holds a receiver name.
const (
	HeldByIt Holder = iota
	HeldByOther
	HeldByNobody
)

// MemberDesk answers other stores' questions about the group's members.
type MemberDesk interface {
	// Members answers a Members request.
	Members(reqID uint64) *wire.MemberList
	// Move answers one round of a MemberMove on the connection nc;
	// challenge is the connection's move in progress, which the desk keeps
	// there between the rounds.
	Move(ctx context.Context, m *wire.MemberMove, nc net.Conn, challenge *any) wire.Message
}
