package storehost

import (
	"time"

	"umstore/dirlock"
	"umstore/placement"
	"umstore/storegroup"
)

// BaseConfig returns the configuration every store of a host starts from
// when it runs the policy p and nothing else: storegroup's defaults with p
// over them ([ApplyPolicy]). A daemon sets its own settings on it (the
// receivers', the log store, standby), and [Configs] fills in each store's
// identity.
func BaseConfig(p placement.Policy) storegroup.Config {
	cfg := storegroup.DefaultConfig()
	ApplyPolicy(&cfg, p)
	return cfg
}

// ApplyPolicy puts the deployment's policy p into effect on cfg: each key
// of p sets its one field of cfg, and cfg.Policy and cfg.PolicyDigest
// become p's canonical form and digest, which the members of a group
// compare. A key that holds no setting stands for its default
// ([placement.Policy.WithDefaults]); every other key is taken as it is,
// zero included. Fields that are no part of the policy (the receivers'
// settings, the log store, the lock's standby) are left as they are.
//
// The policy's keepalive-interval is the publishers' and sets nothing of a
// store; it is part of the digest all the same, as is lock.keepalive when
// the lock is a flock (which does not renew).
func ApplyPolicy(cfg *storegroup.Config, p placement.Policy) {
	p = p.WithDefaults()
	mode, err := dirlock.ParseMode(p.Lock.Mode)
	if err != nil {
		mode = dirlock.ModeFlock // a validated deployment names a known mode
	}
	p.Lock.Mode = string(mode)

	cfg.RetentionMaxBytes = p.Retention.MaxBytes
	cfg.RetentionMaxMessages = p.Retention.MaxMessages
	cfg.RetentionMaxAge = time.Duration(p.Retention.MaxAge)
	cfg.RetentionInterval = time.Duration(p.Retention.Interval)
	cfg.SourceActivityTimeout = time.Duration(p.SourceActivityTimeout)
	cfg.RepairBytesPerSecond = p.RepairRate
	cfg.Lock.Mode = mode
	cfg.Lock.AcquireInterval = time.Duration(p.Lock.AcquireInterval)
	cfg.Lock.KeepAlive = 0
	if mode == dirlock.ModeLease {
		cfg.Lock.KeepAlive = time.Duration(p.Lock.KeepAlive)
	}
	cfg.SnapshotThreshold = p.Snapshot.Threshold
	cfg.SnapshotInterval = time.Duration(p.Snapshot.Interval)
	cfg.TrailingLogs = p.Snapshot.TrailingLogs
	cfg.LeaderSettle = time.Duration(p.Leadership.Settle)
	cfg.LeaderMinInterval = time.Duration(p.Leadership.MinInterval)
	cfg.Policy, cfg.PolicyDigest = p.Canonical(), p.Digest()
}
