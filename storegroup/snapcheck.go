package storegroup

import (
	"errors"
	"fmt"
	"time"
)

// minSnapshotInterval is the shortest snapshot interval hashicorp/raft
// accepts (its ValidateConfig).
const minSnapshotInterval = 5 * time.Millisecond

// CheckSnapshotSettings refuses log-compaction settings (Config's
// SnapshotThreshold and SnapshotInterval) that raft would reject or that
// make no sense, before any store starts. Its errors name the settings as
// umstored's flags spell them (--snapshot-threshold, --snapshot-interval),
// which is where operators set them.
func CheckSnapshotSettings(threshold uint64, interval time.Duration) error {
	if threshold < 1 {
		return errors.New("--snapshot-threshold must be at least 1: with 0 raft would try to snapshot at every check, even with nothing new to compact")
	}
	if interval < minSnapshotInterval {
		return fmt.Errorf("--snapshot-interval %v is too short: raft needs at least %v (the default is %v)", interval, minSnapshotInterval, DefaultConfig().SnapshotInterval)
	}
	return nil
}
