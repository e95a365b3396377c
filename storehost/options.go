package storehost

import (
	"time"

	"umstore/dirlock"
	"umstore/storegroup"
)

// Options are the daemon's settings that apply to every store it runs:
// the deployment's policy (PolicyOptions), with whatever a flag of the
// daemon overrides. Start from DefaultOptions or PolicyOptions: unlike
// storegroup.Config, the zero value of a retention or snapshot field is a
// setting (no limit, no trailing logs), not "the default".
type Options struct {
	// Lock is how each store locks its data directory (flock or lease,
	// standby).
	Lock dirlock.Options
	// LockKeepAlive is the policy's lock keep-alive, kept for the policy's
	// digest when the lock is a flock (which does not renew).
	LockKeepAlive time.Duration
	// RetentionMaxBytes, RetentionMaxMessages and RetentionMaxAge bound
	// each source's repository (0: no limit).
	RetentionMaxBytes    uint64
	RetentionMaxMessages uint64
	RetentionMaxAge      time.Duration
	// RetentionInterval is how often a leader checks the limits; 0 keeps
	// the store's default.
	RetentionInterval time.Duration
	// SourceActivityTimeout frees a silent publisher's source; 0 keeps
	// the store's default.
	SourceActivityTimeout time.Duration
	// ReceiverActivityTimeout expires a silent receiver; 0 keeps the
	// store's default. ReceiverStateLifetime forgets a silent receiver's
	// state (0: kept). AllowReceiverPacedPersistence lets publishers ask
	// for receiver-paced persistence.
	ReceiverActivityTimeout       time.Duration
	ReceiverStateLifetime         time.Duration
	AllowReceiverPacedPersistence bool
	// KeepAliveInterval is the publishers' keep-alive period: the stores
	// do not use it, but it is part of the policy they compare.
	KeepAliveInterval time.Duration
	// RepairBytesPerSecond caps intergroup repair; 0 keeps the store's
	// default.
	RepairBytesPerSecond int
	// SnapshotThreshold, SnapshotInterval and TrailingLogs tune raft's log
	// compaction (see storegroup.Config).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// LeaderSettle and LeaderMinInterval are leader placement's hysteresis
	// (storegroup.Config); LeaderSettle 0 turns placement off.
	LeaderSettle      time.Duration
	LeaderMinInterval time.Duration
	// LogStore is the raft log store of new stores: storegroup.LogStoreWAL
	// (also for "") or storegroup.LogStoreBoltDB. A store that has a log
	// keeps its kind.
	LogStore string
}

// DefaultOptions returns storegroup's defaults.
func DefaultOptions() Options {
	def := storegroup.DefaultConfig()
	o := Options{
		RetentionMaxBytes:     def.RetentionMaxBytes,
		RetentionMaxMessages:  def.RetentionMaxMessages,
		RetentionMaxAge:       def.RetentionMaxAge,
		RetentionInterval:     def.RetentionInterval,
		SourceActivityTimeout: def.SourceActivityTimeout,
		KeepAliveInterval:     3 * time.Second, // the publisher's default
		RepairBytesPerSecond:  def.RepairBytesPerSecond,
		SnapshotThreshold:     def.SnapshotThreshold,
		SnapshotInterval:      def.SnapshotInterval,
		TrailingLogs:          def.TrailingLogs,
		LockKeepAlive:         dirlock.DefaultKeepAlive,
		LeaderSettle:          def.LeaderSettle,
		LeaderMinInterval:     def.LeaderMinInterval,
	}
	o.ReceiverActivityTimeout = def.ReceiverActivityTimeout
	return o
}

// Validate refuses settings the stores would reject, before any starts.
// Its errors name umstored's flags.
func (o *Options) Validate() error {
	if err := storegroup.CheckLogStore(o.LogStore); err != nil {
		return err
	}
	return storegroup.CheckSnapshotSettings(o.SnapshotThreshold, o.SnapshotInterval)
}
