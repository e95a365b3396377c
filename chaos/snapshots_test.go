package main

import (
	"slices"
	"testing"
	"time"
)

// Each schedule's snapshot settings come from its seed and index alone,
// stay in the small ranges that make snapshot installs happen, and vary.
func TestSnapshotSettingsAreReproducible(t *testing.T) {
	seen := map[SnapshotSettings]bool{}
	for seed := int64(0); seed < 20; seed++ {
		for index := range 10 {
			s := pickSnapshotSettings(seed, index)
			if again := pickSnapshotSettings(seed, index); *again != *s {
				t.Fatalf("seed %d schedule %d: %v, then %v", seed, index, s, again)
			}
			if s.Threshold < 64 || s.Threshold > 256 || s.Interval < time.Second || s.Interval > 2*time.Second || s.TrailingLogs < 16 || s.TrailingLogs > 64 {
				t.Fatalf("seed %d schedule %d: %v out of range", seed, index, s)
			}
			switch {
			case index%2 == 0 && (s.RetentionMaxMessages < minRetention || s.RetentionMaxMessages > maxRetention):
				t.Fatalf("seed %d schedule %d: retention %d out of range", seed, index, s.RetentionMaxMessages)
			case index%2 == 1 && s.RetentionMaxMessages != 0:
				t.Fatalf("seed %d schedule %d: odd schedules retain everything, not %d", seed, index, s.RetentionMaxMessages)
			}
			seen[*s] = true
		}
	}
	if len(seen) < 100 {
		t.Fatalf("only %d different settings in 200 schedules", len(seen))
	}
}

func TestSnapshotSettingsArgs(t *testing.T) {
	var none *SnapshotSettings
	if none.args() != nil || none.String() != "umstored's defaults" {
		t.Fatalf("defaults: %q %q", none.args(), none)
	}
	s := &SnapshotSettings{Threshold: 128, Interval: 1500 * time.Millisecond, TrailingLogs: 32}
	want := []string{"--snapshot-threshold", "128", "--snapshot-interval", "1.5s", "--trailing-logs", "32"}
	if got := s.args(); !slices.Equal(got, want) {
		t.Fatalf("args = %q, want %q", got, want)
	}
	s.RetentionMaxMessages = 900
	want = append(want, "--retention-max-messages", "900")
	if got := s.args(); !slices.Equal(got, want) {
		t.Fatalf("args = %q, want %q", got, want)
	}
}
