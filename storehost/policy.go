package storehost

import (
	"time"

	"umstore/dirlock"
	"umstore/placement"
)

// PolicyOptions returns the options that put a deployment's policy into
// effect on a host: every store of the host runs it. Per-daemon settings
// that are no part of the policy (standby) are left at their zero values.
func PolicyOptions(p placement.Policy) Options {
	mode, err := dirlock.ParseMode(p.Lock.Mode)
	if err != nil {
		mode = dirlock.ModeFlock // a validated deployment names a known mode
	}
	lock := dirlock.Options{Mode: mode, AcquireInterval: time.Duration(p.Lock.AcquireInterval)}
	if mode == dirlock.ModeLease {
		lock.KeepAlive = time.Duration(p.Lock.KeepAlive)
	}
	return Options{
		Lock:                  lock,
		LockKeepAlive:         time.Duration(p.Lock.KeepAlive),
		RetentionMaxBytes:     p.Retention.MaxBytes,
		RetentionMaxMessages:  p.Retention.MaxMessages,
		RetentionMaxAge:       time.Duration(p.Retention.MaxAge),
		RetentionInterval:     time.Duration(p.Retention.Interval),
		SourceActivityTimeout: time.Duration(p.SourceActivityTimeout),
		KeepAliveInterval:     time.Duration(p.KeepAliveInterval),
		RepairBytesPerSecond:  p.RepairRate,
		SnapshotThreshold:     p.Snapshot.Threshold,
		SnapshotInterval:      time.Duration(p.Snapshot.Interval),
		TrailingLogs:          p.Snapshot.TrailingLogs,
		LeaderSettle:          time.Duration(p.Leadership.Settle),
		LeaderMinInterval:     time.Duration(p.Leadership.MinInterval),
	}
}

// Policy returns the policy o puts into effect: what the stores of the
// host run, and compare with their groups' other members. A zero field
// that storegroup fills with its default reads as that default.
func (o Options) Policy() placement.Policy {
	def := DefaultOptions()
	mode := string(o.Lock.Mode)
	if mode == "" {
		mode = placement.LockFlock
	}
	keepAlive := o.LockKeepAlive
	if o.Lock.KeepAlive > 0 {
		keepAlive = o.Lock.KeepAlive
	}
	if keepAlive <= 0 {
		keepAlive = dirlock.DefaultKeepAlive
	}
	or := func(v, d time.Duration) placement.Duration {
		if v <= 0 {
			return placement.Duration(d)
		}
		return placement.Duration(v)
	}
	repair := o.RepairBytesPerSecond
	if repair <= 0 {
		repair = def.RepairBytesPerSecond
	}
	return placement.Policy{
		Retention: placement.RetentionPolicy{
			MaxBytes:    o.RetentionMaxBytes,
			MaxMessages: o.RetentionMaxMessages,
			MaxAge:      placement.Duration(o.RetentionMaxAge),
			Interval:    or(o.RetentionInterval, def.RetentionInterval),
		},
		SourceActivityTimeout: or(o.SourceActivityTimeout, def.SourceActivityTimeout),
		KeepAliveInterval:     or(o.KeepAliveInterval, def.KeepAliveInterval),
		RepairRate:            repair,
		Lock:                  placement.LockPolicy{Mode: mode, KeepAlive: placement.Duration(keepAlive), AcquireInterval: placement.Duration(o.Lock.AcquireInterval)},
		Snapshot:              placement.SnapshotPolicy{Threshold: o.SnapshotThreshold, Interval: placement.Duration(o.SnapshotInterval), TrailingLogs: o.TrailingLogs},
		Leadership:            placement.LeadershipPolicy{Settle: placement.Duration(o.LeaderSettle), MinInterval: placement.Duration(o.LeaderMinInterval)},
	}
}
