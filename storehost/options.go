package storehost

import (
	"time"

	"umstore/dirlock"
	"umstore/storegroup"
)

// Options are the daemon's settings that apply to every store it runs.
// Start from DefaultOptions: unlike storegroup.Config, the zero value of a
// retention or snapshot field is a setting (no limit, no trailing logs),
// not "the default".
type Options struct {
	// Lock is how each store locks its data directory (flock or lease,
	// standby).
	Lock dirlock.Options
	// RetentionMaxBytes, RetentionMaxMessages and RetentionMaxAge bound
	// each source's repository (0: no limit).
	RetentionMaxBytes    uint64
	RetentionMaxMessages uint64
	RetentionMaxAge      time.Duration
	// SourceActivityTimeout frees a silent publisher's source; 0 keeps
	// the store's default.
	SourceActivityTimeout time.Duration
	// RepairBytesPerSecond caps intergroup repair; 0 keeps the store's
	// default.
	RepairBytesPerSecond int
	// SnapshotThreshold, SnapshotInterval and TrailingLogs tune raft's log
	// compaction (see storegroup.Config).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// LogStore is the raft log store of new stores: storegroup.LogStoreWAL
	// (also for "") or storegroup.LogStoreBoltDB. A store that has a log
	// keeps its kind.
	LogStore string
}

// DefaultOptions returns storegroup's defaults.
func DefaultOptions() Options {
	def := storegroup.DefaultConfig()
	return Options{
		RetentionMaxBytes:     def.RetentionMaxBytes,
		RetentionMaxMessages:  def.RetentionMaxMessages,
		RetentionMaxAge:       def.RetentionMaxAge,
		SourceActivityTimeout: def.SourceActivityTimeout,
		RepairBytesPerSecond:  def.RepairBytesPerSecond,
		SnapshotThreshold:     def.SnapshotThreshold,
		SnapshotInterval:      def.SnapshotInterval,
		TrailingLogs:          def.TrailingLogs,
	}
}

// Validate refuses settings the stores would reject, before any starts.
// Its errors name umstored's flags.
func (o *Options) Validate() error {
	if err := storegroup.CheckLogStore(o.LogStore); err != nil {
		return err
	}
	return storegroup.CheckSnapshotSettings(o.SnapshotThreshold, o.SnapshotInterval)
}
