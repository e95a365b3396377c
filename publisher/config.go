package publisher

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"umstore/quorum"
	"umstore/wire"
)

// FlightBehavior says what Send does when the flight is full: FlightSize
// messages (or FlightSizeBytes of payload) are unstable (UM
// ume_flight_size_behavior).
type FlightBehavior int

const (
	// FlightBlock makes Send wait until a message becomes stable (UM's
	// default "block").
	FlightBlock FlightBehavior = iota
	// FlightRefuse makes Send return ErrFlightFull at once, so the
	// application can decide (UM's non-blocking send, LBM_EWOULDBLOCK).
	FlightRefuse
	// FlightNotify lets Send go on past the limit (UM's "notify"): the send
	// that finds the flight full succeeds, and Config.OnFlightSize is told
	// FlightOver; once the flight is no longer full it is told
	// FlightUnder. Unstable messages, and the memory they hold, are then
	// bounded only by the application.
	FlightNotify
)

// ParseFlightBehavior returns the behaviour UM calls s: "block" or
// "notify" (UM ume_flight_size_behavior), or "refuse" (Send fails with
// ErrFlightFull).
func ParseFlightBehavior(s string) (FlightBehavior, error) {
	switch s {
	case "block":
		return FlightBlock, nil
	case "notify":
		return FlightNotify, nil
	case "refuse":
		return FlightRefuse, nil
	}
	return FlightBlock, fmt.Errorf("%w: flight size behaviour %q (want block, notify or refuse)", ErrConfig, s)
}

// String returns the name ParseFlightBehavior accepts.
func (b FlightBehavior) String() string {
	switch b {
	case FlightBlock:
		return "block"
	case FlightNotify:
		return "notify"
	case FlightRefuse:
		return "refuse"
	}
	return fmt.Sprintf("FlightBehavior(%d)", int(b))
}

// Config configures a Publisher. Start from DefaultConfig.
type Config struct {
	// Source names the stream of messages; one publisher per source. It
	// is 1 to wire.MaxSourceNameLen bytes of printable UTF-8
	// (wire.CheckSourceName).
	Source string
	// Groups lists, per store group (index 0 is group 1), the client
	// addresses of its stores. The publisher registers with every group.
	Groups [][]string
	// Intergroup decides when a message is stable. Default quorum.Any.
	Intergroup quorum.Behavior
	// Intragroup asks each group to confirm a message only once the
	// members it names hold it (UM ume_retention_intragroup_stability_behavior):
	// quorum.IntragroupQuorum (the default: the group's raft commit, a
	// majority), IntragroupAllActive (every running store of the group) or
	// IntragroupAll (every store; a group with a store down confirms
	// nothing). The groups apply the stricter of it and the deployment's
	// stability.intragroup; Registration reports what each applies. Stores
	// older than the option refuse a registration that asks for more than
	// quorum rather than apply less.
	Intragroup quorum.Intragroup
	// FlightSize bounds unstable messages (UM ume_flight_size, default 1000).
	FlightSize int
	// FlightSizeBytes, if not 0, also bounds the payload bytes of unstable
	// messages (UM ume_flight_size_bytes, default 0: off): the flight is
	// full when either limit is reached. A message larger than the limit
	// still goes when nothing else is in flight.
	FlightSizeBytes int64
	// Flight says what Send does when the flight is full (default block).
	Flight FlightBehavior
	// StabilityLifetime is how long a message may stay unstable before the
	// publisher reports it to OnUnstable (UM
	// ume_message_stability_lifetime, default 20 minutes; 0: never). The
	// message is still retained, resent and counted in flight: umstore
	// reports stability in sequence order, so giving up on one message
	// would hold back every later one. UM also reclaims it.
	StabilityLifetime time.Duration
	// RetentionSizeLimit bounds the payload bytes kept after stability while
	// waiting for the other groups (UM retransmit_retention_size_limit,
	// default 24 MB). Past it the oldest stable messages are released even
	// if a group has not confirmed them; Stats counts them.
	RetentionSizeLimit int64
	// RegisterTimeout is how long New waits for every group to answer
	// before deciding the resume point with the groups that did (default
	// 5s). A group whose stores say it has had no leader for longer than
	// an election takes (groupclient.LostMajorityAfter) is not waited for:
	// it lost its majority and answers nothing until it is back.
	RegisterTimeout time.Duration
	// MaxBatch and MaxBatchBytes bound one Publish frame (one raft entry).
	// Larger frames cost the stores more, not less: their raft log rewrites
	// recent entries on every write (see storegroup's merge bounds).
	MaxBatch      int
	MaxBatchBytes int
	// KeepAliveInterval is how often the publisher tells each group it is
	// alive while it has nothing to publish (UM keepalive-interval, 3s), so
	// its source is not expired by source-activity-timeout.
	KeepAliveInterval time.Duration
	// AckTimeout is how long a group may leave sent messages (or, when the
	// publisher is idle, a Ping) unanswered before the publisher gives up
	// on its connection and finds the group's leader again: a paused or
	// partitioned leader keeps the TCP connection open but never answers.
	// Idle, the publisher pings each group's leader every AckTimeout/2.
	// Default 1s, about an election: by then the group has a new leader. A
	// group that stalled and then answered from the same leader was slow,
	// not gone: its bound doubles (up to 16 times), and comes back after a
	// minute without stalls (ackwait.go).
	AckTimeout time.Duration
	// ReconnectDelay is the pause between attempts to reach a group.
	ReconnectDelay time.Duration
	// StateFile, if set, is a file where the publisher keeps the last
	// sequence number it was told was stable, a bound on the numbers it
	// sent (written before they are sent, a few thousand at a time), the
	// groups' identities and its session identity. A restarted publisher
	// then resumes past what it was told was stable even when the groups
	// holding it are unreachable, and, when some group does not answer,
	// past everything it may have sent, narrowing the sequence-reuse window
	// of intergroup "any" (see the README); and it takes its source over at
	// once (see Session). One file per source.
	StateFile string
	// Session is the publisher's session identity: what the stores know
	// it by (UM's RegID or session ID name one too: RegID, SessionID).
	// Each New is an incarnation of it, registered as "Session#EPOCH" with
	// an epoch above every earlier incarnation's, so a publisher restarted
	// with the same identity (the same Session, RegID or SessionID, or the
	// identity its StateFile keeps) takes its source over at once and its
	// previous incarnation is fenced (ErrFenced) instead of waiting out the
	// stores' source-activity-timeout; another publisher still waits.
	// Empty: RegID or SessionID, else the StateFile's identity, else a
	// random one (each New then a publisher of its own). Whoever knows it
	// can take the source over: keep static ones for deployments with a
	// client token or mutual TLS.
	Session string
	// RegID, if not 0, is a static registration ID (UM's RegID in
	// ume_store): the session is "regid:N", the same whenever the
	// publisher restarts. Give it the RegID of the store list.
	RegID uint32
	// StoreRegIDs, if set, are static RegIDs given per store, as UM gives
	// each store its own: per group (in Groups order), the RegIDs of its
	// stores. A group's stores are one replicated store whose log records
	// the registration, and any of them may lead, so the publisher is one
	// session to the whole group: the session is "regids:" and a digest of
	// each group's RegIDs taken as a set. A restart with the same list is
	// the same session, whichever store leads and in whatever order a
	// group's RegIDs are given; another assignment is another session.
	StoreRegIDs [][]uint32
	// SessionID, if not 0, is UM's ume_session_id (at most
	// 0xFFFFFFFFFFFFFFFE): the session is "session-id:0x" and 16 hex
	// digits, for every source of the application. At most one of
	// Session, RegID, StoreRegIDs and SessionID may be set.
	SessionID uint64
	// LocalIP, if set, is the address connections leave from.
	LocalIP net.IP
	// TLS, if set, is used for every connection to the stores (the
	// deployment's CA as RootCAs, and a client certificate if the stores
	// require one).
	TLS *tls.Config
	// Token is presented to the stores when the deployment requires one.
	Token string
	// Connections, if set, are shared with the other publishers of the
	// process given the same (NewConnections): one connection per store
	// for all of them. Nil gives the publisher connections of its own.
	Connections *Connections
	// OnStable, if set, is called with each newly stable range of sequence
	// numbers, in order, from one goroutine. It must not block for long.
	OnStable func(first, last uint64)
	// OnGroupStable, if set, is called whenever a group confirms more
	// messages: each group's ranges in order (UM's per-store stability
	// event, MESSAGE_STABLE_EX with INTRAGROUP_STABLE and STORE: here the
	// store is the group's leader, which acknowledges for the group).
	OnGroupStable func(GroupStable)
	// OnFlightSize, if set, is told when the flight goes over its limit and
	// back under (FlightNotify only; UM's flight size notification).
	OnFlightSize func(FlightEvent)
	// OnUnstable, if set, is told of messages that will not be stable soon:
	// still unstable after StabilityLifetime, or lost in a group that said
	// so (a stability NAK).
	OnUnstable func(Unstable)
	// OnGroupStable, OnFlightSize and OnUnstable are called from one
	// goroutine (not OnStable's), in the order the events happened; they
	// must not block for long.
	// ReceiverPaced asks the stores for receiver-paced persistence (UM
	// ume_receiver_paced_persistence): the source's messages are kept until
	// its active paced receivers consumed them, within the retention
	// limits; at the limit the stores hold this publisher back
	// (PacingBlocking: Send then blocks on FlightSize) or release the
	// oldest (PacingNonBlocking: the lagging receivers see them as
	// unrecoverable loss). The stores must allow it (umstored
	// --allow-receiver-paced-persistence), else registration fails.
	ReceiverPaced Pacing
	// ConfirmedDelivery, if above 0, asks the groups to report how far the
	// source's named receivers consumed it, and makes a message confirmed
	// once that many distinct receivers (by name, whatever group told) have
	// consumed it (UM ume_confirmed_delivery_notification with
	// ume_retention_unique_confirmations).
	ConfirmedDelivery int
	// OnConfirmed, if set, is called with each newly confirmed range of
	// this session's sequence numbers, in order, from one goroutine.
	OnConfirmed func(first, last uint64)
	// RetainUntilConfirmed keeps each message in the retention buffer, and
	// counts it in flight, until it is confirmed as well as stable (UM
	// ume_retention_unique_confirmations): Send then waits for receivers,
	// a form of receiver pacing. RetentionSizeLimit still releases the
	// oldest stable messages when exceeded (counted in ForcedReleases).
	RetainUntilConfirmed bool
	// Logger receives the publisher's logs. Nil means slog.Default.
	Logger *slog.Logger
}

// Pacing is a source's receiver-paced persistence (UM
// ume_receiver_paced_persistence).
type Pacing string

const (
	// PacingNone is source-paced persistence: the stores keep messages up
	// to their retention limits, whoever consumed them (the default).
	PacingNone Pacing = wire.PacingNone
	// PacingBlocking keeps messages until the active paced receivers
	// consumed them, holding the publisher back at the retention limit.
	PacingBlocking Pacing = wire.PacingBlocking
	// PacingNonBlocking keeps messages until the active paced receivers
	// consumed them, releasing the oldest at the retention limit.
	PacingNonBlocking Pacing = wire.PacingNonBlocking
)

// DefaultConfig returns a configuration with UM's defaults; set Source and
// Groups.
func DefaultConfig() Config {
	return Config{
		Intergroup:         quorum.Any,
		FlightSize:         1000,
		RetentionSizeLimit: 24 << 20,
		RegisterTimeout:    5 * time.Second,
		MaxBatch:           512,
		MaxBatchBytes:      512 << 10,
		ReconnectDelay:     200 * time.Millisecond,
		KeepAliveInterval:  3 * time.Second,
		AckTimeout:         time.Second,
		StabilityLifetime:  20 * time.Minute,
	}
}

// Sentinel errors, testable with errors.Is.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("invalid publisher configuration")
	// ErrFlightFull is returned by Send with FlightRefuse when the flight is
	// full (FlightSize messages, or FlightSizeBytes, unstable).
	ErrFlightFull = errors.New("flight size reached: too many unstable messages")
	// ErrRegistration means the registration did not complete: too few
	// groups answered it for the intergroup behaviour within the
	// context's deadline, or a group refused it (the error says which).
	ErrRegistration = errors.New("registration incomplete")
	// ErrIntragroup means a group does not apply the intragroup behaviour
	// Config.Intragroup asks for (its stores are older than the option):
	// no retry changes that, so registration fails unless enough other
	// groups answered.
	ErrIntragroup = errors.New("a store group does not apply the intragroup behaviour asked for")
	// ErrSourceBusy means another live publisher holds the source; it is
	// freed when that publisher closes, or after the stores'
	// source-activity-timeout of silence.
	ErrSourceBusy = errors.New("source held by another live publisher")
	// ErrRefused means a group refused the registration for a reason any
	// store of the deployment gives alike (an option the stores do not
	// allow, a TLS certificate they do not accept): the store's own words
	// follow, and trying again does not help.
	ErrRefused = errors.New("the stores refused the registration")
	// ErrMembersDown means a group did not complete the registration: its
	// intragroup behaviour is all and one of its stores is not running, so
	// it could confirm nothing (UM does not complete such a registration
	// either). The store's words name the missing store. The publisher
	// tries the group again, and registers with it once the store is back;
	// New fails at once if too few other groups answer for the intergroup
	// behaviour.
	ErrMembersDown = errors.New("a store group does not complete the registration while one of its stores is down")
	// ErrClosed is returned by calls on a closed Publisher.
	ErrClosed = errors.New("publisher closed")
	// ErrSequenceExhausted means the source has used every sequence number
	// up to wire.MaxSeq, the highest one a source may have: Send refuses
	// the message past it, and New a source whose groups (or state file)
	// already hold it. Nothing more can be published under this source
	// name; publish under a new one.
	ErrSequenceExhausted = errors.New("the source has used every sequence number")
	// ErrFenced means a later incarnation of this publisher (same session
	// identity: restarted with the same state file or Session) took the
	// source over: this one must stop. Send and New return it.
	ErrFenced = errors.New("a later incarnation of this publisher took the source over")
	// ErrTooLarge is returned by Send for a payload larger than
	// wire.MaxPayload, the largest a store keeps and serves back. The
	// payload gets no sequence number; later messages are not affected.
	ErrTooLarge = errors.New("payload too large")
)

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Source == "" {
		return fmt.Errorf("%w: Source is empty", ErrConfig)
	}
	if err := wire.CheckSourceName(c.Source); err != nil {
		return fmt.Errorf("%w: Source: %w", ErrConfig, err)
	}
	if len(c.Groups) == 0 {
		return fmt.Errorf("%w: no store groups given", ErrConfig)
	}
	for i, g := range c.Groups {
		if len(g) == 0 {
			return fmt.Errorf("%w: group %d has no stores", ErrConfig, i+1)
		}
	}
	if c.FlightSize < 1 {
		return fmt.Errorf("%w: FlightSize must be at least 1", ErrConfig)
	}
	if c.FlightSizeBytes < 0 {
		return fmt.Errorf("%w: FlightSizeBytes must not be negative (0: no byte limit)", ErrConfig)
	}
	if c.Flight < FlightBlock || c.Flight > FlightNotify {
		return fmt.Errorf("%w: Flight is %s; use FlightBlock, FlightNotify or FlightRefuse", ErrConfig, c.Flight)
	}
	if c.StabilityLifetime < 0 {
		return fmt.Errorf("%w: StabilityLifetime must not be negative (0: never report)", ErrConfig)
	}
	if err := c.checkSession(); err != nil {
		return err
	}
	if c.MaxBatch < 1 || c.MaxBatchBytes < 1 {
		return fmt.Errorf("%w: MaxBatch and MaxBatchBytes must be positive", ErrConfig)
	}
	if c.Intragroup < quorum.IntragroupQuorum || c.Intragroup > quorum.IntragroupAll {
		return fmt.Errorf("%w: Intragroup is %s; use quorum.IntragroupQuorum, IntragroupAllActive or IntragroupAll", ErrConfig, c.Intragroup)
	}
	switch c.ReceiverPaced {
	case PacingNone, PacingBlocking, PacingNonBlocking:
	default:
		return fmt.Errorf("%w: ReceiverPaced %q: want blocking or non-blocking (or empty)", ErrConfig, c.ReceiverPaced)
	}
	if c.ConfirmedDelivery < 0 || (c.ConfirmedDelivery == 0 && (c.OnConfirmed != nil || c.RetainUntilConfirmed)) {
		return fmt.Errorf("%w: OnConfirmed and RetainUntilConfirmed need ConfirmedDelivery, the number of distinct receivers that confirm a message", ErrConfig)
	}
	if c.RegisterTimeout <= 0 || c.ReconnectDelay <= 0 || c.KeepAliveInterval <= 0 || c.AckTimeout <= 0 {
		return fmt.Errorf("%w: RegisterTimeout, ReconnectDelay, KeepAliveInterval and AckTimeout must be positive", ErrConfig)
	}
	if c.Session != "" && !printableIdentity(c.Session) {
		return fmt.Errorf("%w: Session must be 1 to 128 printable characters", ErrConfig)
	}
	return nil
}
