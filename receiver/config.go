package receiver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"umstore/wire"
)

// Config configures a Receiver. Start from DefaultConfig.
type Config struct {
	// Source is the source to read.
	Source string
	// Groups lists, per store group (index 0 is group 1), the client
	// addresses of its stores.
	Groups [][]string
	// Group, if not 0, restricts reading to that group (1-based): for an
	// operator checking one group's contents.
	Group int
	// FetchCount and FetchBytes bound one fetch round trip.
	FetchCount int
	FetchBytes int
	// Name makes the receiver durable (UM's receiver RegID / session ID): it
	// registers under this name with every group, which record, through
	// their logs, the last message it consumed; started again under the
	// same name it resumes after it (Resume). One live receiver per name
	// and source: another is refused until this one closes or stays silent
	// for the stores' receiver-activity-timeout. "" reads without a name:
	// nothing is recorded.
	Name string
	// Session identifies this receiver instance to the stores; random by
	// default. An instance restarted with the same Session is not refused
	// while its previous incarnation's activity timeout runs. Like a
	// publisher's, a session is a bearer secret.
	Session string
	// Consensus chooses the resume point when the stores recorded
	// different positions (UM ume_consensus_sequence_number_behavior,
	// default Majority; see Consensus for what each risks).
	Consensus Consensus
	// ExplicitAck leaves acknowledging to the application (UM
	// ume_explicit_ack_only): only Ack moves the receiver's position. By
	// default a message is acknowledged once the handler returns it
	// without an error.
	ExplicitAck bool
	// AckInterval is how often a durable receiver records how far it
	// consumed (UM ume_ack_batching_interval, 100ms): acknowledgements are
	// batched, at most one raft entry per group per interval, never one per
	// message. It bounds what a crash redelivers (see the package doc).
	AckInterval time.Duration
	// KeepAliveInterval is how often a durable receiver that consumed
	// nothing new tells the groups it is alive (UM
	// ume_proactive_keepalive_interval, 3s); it must stay well below the
	// stores' receiver-activity-timeout (30s).
	KeepAliveInterval time.Duration
	// RegisterTimeout is how long a durable receiver waits for every group
	// to answer its registration before it resumes with the groups that
	// did (at least one); a group whose leader says the name is held by a
	// live receiver is waited for until the context ends.
	RegisterTimeout time.Duration
	// Paced registers the receiver as a receiver-paced persistence receiver
	// (UM ume_receiver_paced_persistence): while it is active, a paced
	// source keeps its messages until it consumed them.
	Paced bool
	// MissingGrace is how long Follow waits for an unreachable group before
	// it reports a range the reachable groups do not hold as lost and skips
	// it. 0 (the default) waits for every group: a message stable only in a
	// group whose host is down is delivered when the host returns, never
	// skipped.
	MissingGrace time.Duration
	// OnUnpublished, if set, hears of each range Read or Follow passes over
	// because its publisher declared it never published (unpublished.go):
	// neither delivered nor reported as missing, but an application (or a
	// checker) that accounts for every number can hear of it here.
	OnUnpublished func(Range)
	// LocalIP, if set, is the address connections leave from.
	LocalIP net.IP
	// TLS, if set, is used for every connection to the stores.
	TLS *tls.Config
	// Token is presented to the stores when the deployment requires one.
	Token string
	// Logger receives the receiver's logs. Nil means slog.Default.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults; set Source and Groups (and Name for a
// durable receiver).
func DefaultConfig() Config {
	return Config{
		FetchCount:        1000,
		FetchBytes:        1 << 20,
		Consensus:         Majority,
		AckInterval:       100 * time.Millisecond,
		KeepAliveInterval: 3 * time.Second,
		RegisterTimeout:   5 * time.Second,
	}
}

// Sentinel errors, testable with errors.Is.
var (
	// ErrConfig wraps configuration errors.
	ErrConfig = errors.New("invalid receiver configuration")
	// ErrMissing means some sequence numbers are held by no reachable group;
	// the error is a *MissingError naming the ranges.
	ErrMissing = errors.New("messages held by no reachable store group")
	// ErrUnreachable means no group could be asked.
	ErrUnreachable = errors.New("no store group reachable")
	// ErrNameBusy means another live receiver holds the name: it is freed
	// when that receiver closes, or after the stores'
	// receiver-activity-timeout of its silence.
	ErrNameBusy = errors.New("receiver name held by another live receiver")
	// ErrForbidden means the stores refused this client's identity the
	// source or the receiver name (a deployment with client identities,
	// docs/security.md): the stores' words follow, naming the identity and
	// the permission, and trying again does not help.
	ErrForbidden = errors.New("the stores refused this client")
	// ErrNotDurable is returned by Ack and Register on a receiver without a
	// Name.
	ErrNotDurable = errors.New("the receiver has no name: nothing is recorded")
	// ErrAckAhead is returned by Ack for a sequence number the receiver was
	// not delivered yet: a position is recorded only for what was consumed.
	ErrAckAhead = errors.New("acknowledgement beyond the messages delivered")
)

// validate checks the configuration.
func (c *Config) validate() error {
	switch {
	case c.Source == "":
		return fmt.Errorf("%w: Source is empty", ErrConfig)
	case len(c.Groups) == 0:
		return fmt.Errorf("%w: no store groups given", ErrConfig)
	case c.Group < 0 || c.Group > len(c.Groups):
		return fmt.Errorf("%w: group %d does not exist (the deployment has %d)", ErrConfig, c.Group, len(c.Groups))
	case c.FetchCount <= 0 || c.FetchBytes <= 0:
		return fmt.Errorf("%w: FetchCount and FetchBytes must be positive", ErrConfig)
	}
	if c.Name == "" {
		return nil
	}
	if err := wire.CheckSourceName(c.Name); err != nil {
		return fmt.Errorf("%w: Name: %w", ErrConfig, err)
	}
	if c.Consensus < Majority || c.Consensus > Highest {
		return fmt.Errorf("%w: Consensus %d is not lowest, majority or highest", ErrConfig, c.Consensus)
	}
	if c.AckInterval <= 0 || c.KeepAliveInterval <= 0 || c.RegisterTimeout <= 0 {
		return fmt.Errorf("%w: AckInterval, KeepAliveInterval and RegisterTimeout must be positive", ErrConfig)
	}
	return nil
}
