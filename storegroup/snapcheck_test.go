package storegroup_test

import (
	"strings"
	"testing"
	"time"

	"umstore/storegroup"
)

func TestCheckSnapshotSettings(t *testing.T) {
	t.Parallel()
	def := storegroup.DefaultConfig()
	for _, tc := range []struct {
		threshold uint64
		interval  time.Duration
		err       string // part of the refusal; empty when accepted
	}{
		{def.SnapshotThreshold, def.SnapshotInterval, ""},
		{1, 5 * time.Millisecond, ""},
		{0, def.SnapshotInterval, "--snapshot-threshold must be at least 1"},
		{1, 4 * time.Millisecond, "--snapshot-interval 4ms is too short: raft needs at least 5ms (the default is 2m0s)"},
		{1, -time.Second, "--snapshot-interval -1s is too short"},
	} {
		err := storegroup.CheckSnapshotSettings(tc.threshold, tc.interval)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckSnapshotSettings(%d, %v) = %v, want %q", tc.threshold, tc.interval, err, tc.err)
		}
	}
}
