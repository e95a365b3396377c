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

// FlightBehavior says what Send does when FlightSize messages are unstable.
type FlightBehavior int

const (
	// FlightBlock makes Send wait until a message becomes stable (UM's
	// default "block").
	FlightBlock FlightBehavior = iota
	// FlightRefuse makes Send return ErrFlightFull at once, so the
	// application can decide (UM's "notify").
	FlightRefuse
)

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
	// FlightSize bounds unstable messages (UM ume_flight_size, default 1000).
	FlightSize int
	// Flight says what Send does when FlightSize is reached (default block).
	Flight FlightBehavior
	// RetentionSizeLimit bounds the payload bytes kept after stability while
	// waiting for the other groups (UM retransmit_retention_size_limit,
	// default 24 MB). Past it the oldest stable messages are released even
	// if a group has not confirmed them; Stats counts them.
	RetentionSizeLimit int64
	// RegisterTimeout is how long New waits for every group to answer
	// before deciding the resume point with the groups that did (default 5s).
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
	// Default 2s, about an election: by then the group has a new leader.
	AckTimeout time.Duration
	// ReconnectDelay is the pause between attempts to reach a group.
	ReconnectDelay time.Duration
	// StateFile, if set, is a file where the publisher keeps the last
	// sequence number it was told was stable, the groups' identities and
	// its session identity. A restarted publisher then resumes past it even
	// when the groups holding it are unreachable, narrowing the
	// sequence-reuse window of intergroup "any" (see the README), and takes
	// its source over at once (see Session). One file per source.
	StateFile string
	// Session is the publisher's session identity: what the stores know
	// it by. Each New is an incarnation of it, registered as
	// "Session#EPOCH" with an epoch above every earlier incarnation's, so
	// a publisher restarted with the same identity (the same Session, or
	// the identity its StateFile keeps) takes its source over at once and
	// its previous incarnation is fenced (ErrFenced) instead of waiting
	// out the stores' source-activity-timeout; another publisher still
	// waits. Empty: the StateFile's identity, or a random one (each New
	// then a publisher of its own). Whoever knows it can take the source
	// over: keep it as secret as the stores' token.
	Session string
	// LocalIP, if set, is the address connections leave from.
	LocalIP net.IP
	// TLS, if set, is used for every connection to the stores (the
	// deployment's CA as RootCAs, and a client certificate if the stores
	// require one).
	TLS *tls.Config
	// Token is presented to the stores when the deployment requires one.
	Token string
	// OnStable, if set, is called with each newly stable range of sequence
	// numbers, in order, from one goroutine. It must not block for long.
	OnStable func(first, last uint64)
	// Logger receives the publisher's logs. Nil means slog.Default.
	Logger *slog.Logger
}

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
		AckTimeout:         2 * time.Second,
	}
}

// Sentinel errors, testable with errors.Is.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("invalid publisher configuration")
	// ErrFlightFull is returned by Send with FlightRefuse when FlightSize
	// messages are unstable.
	ErrFlightFull = errors.New("flight size reached: too many unstable messages")
	// ErrRegistration means too few groups answered the registration for
	// the intergroup behaviour within the context's deadline.
	ErrRegistration = errors.New("registration incomplete: too few store groups answered")
	// ErrSourceBusy means another live publisher holds the source; it is
	// freed when that publisher closes, or after the stores'
	// source-activity-timeout of silence.
	ErrSourceBusy = errors.New("source held by another live publisher")
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
	if c.MaxBatch < 1 || c.MaxBatchBytes < 1 {
		return fmt.Errorf("%w: MaxBatch and MaxBatchBytes must be positive", ErrConfig)
	}
	if c.RegisterTimeout <= 0 || c.ReconnectDelay <= 0 || c.KeepAliveInterval <= 0 || c.AckTimeout <= 0 {
		return fmt.Errorf("%w: RegisterTimeout, ReconnectDelay, KeepAliveInterval and AckTimeout must be positive", ErrConfig)
	}
	if c.Session != "" && !printableIdentity(c.Session) {
		return fmt.Errorf("%w: Session must be 1 to 128 printable characters", ErrConfig)
	}
	return nil
}
