package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// SnapshotSettings are the log-compaction flags a schedule gives every
// `umstored run` it starts. With umstored's defaults (a snapshot every 8192
// entries, 4096 kept after it) a schedule never compacts its log, so a
// wiped or far-behind member always catches up from the log and the
// snapshot install path (the leader streaming a live copy of its
// repository, the member restoring it) is never run. Small values make the
// stores snapshot every second or two and keep only a few dozen entries,
// so most wipes, and some long crashes, pauses and partitions, end in a
// snapshot install.
//
// Over raft-wal the repository is an index over the raft log, and the log
// is compacted only below the oldest entry a retained message refers to:
// retention, not the snapshot settings, bounds it. So the even-numbered
// schedules also set a small --retention-max-messages: their stores
// release old messages as they go, the log is compacted behind them, and a
// wipe ends in a snapshot install. The odd-numbered ones retain everything,
// so the checker verifies every acknowledged message there (see
// retainedFloor for what it verifies under a limit).
type SnapshotSettings struct {
	// Threshold is --snapshot-threshold: entries written between snapshots.
	Threshold uint64 `json:"threshold"`
	// Interval is --snapshot-interval: how often raft checks the threshold.
	Interval time.Duration `json:"interval"`
	// TrailingLogs is --trailing-logs: entries kept after a snapshot.
	TrailingLogs uint64 `json:"trailing_logs"`
	// RetentionMaxMessages is --retention-max-messages: messages each
	// store keeps of each source (0: no limit, not passed).
	RetentionMaxMessages uint64 `json:"retention_max_messages,omitempty"`
}

func (s *SnapshotSettings) String() string {
	if s == nil {
		return "umstored's defaults"
	}
	out := fmt.Sprintf("threshold %d, interval %v, trailing logs %d", s.Threshold, s.Interval, s.TrailingLogs)
	if s.RetentionMaxMessages > 0 {
		out += fmt.Sprintf(", retention %d messages per source", s.RetentionMaxMessages)
	}
	return out
}

// args are the `umstored run` flags for s; none for the defaults (nil).
func (s *SnapshotSettings) args() []string {
	if s == nil {
		return nil
	}
	args := []string{
		"--snapshot-threshold", strconv.FormatUint(s.Threshold, 10),
		"--snapshot-interval", s.Interval.String(),
		"--trailing-logs", strconv.FormatUint(s.TrailingLogs, 10),
	}
	if s.RetentionMaxMessages > 0 {
		args = append(args, "--retention-max-messages", strconv.FormatUint(s.RetentionMaxMessages, 10))
	}
	return args
}

// snapshotStream tells the snapshot settings' random source from the
// fault plan's (scheduleRand), so drawing them leaves every seed's plans as
// they were, with the settings on or off.
const snapshotStream = 0x736e6170 // "snap"

// pickSnapshotSettings draws small snapshot settings for schedule index of
// a run with seed: the same seed and index always give the same settings.
func pickSnapshotSettings(seed int64, index int) *SnapshotSettings {
	rng := rand.New(rand.NewPCG(uint64(seed)^snapshotStream, uint64(index)))
	s := &SnapshotSettings{
		Threshold:    64 + uint64(rng.IntN(256-64+1)),
		Interval:     time.Second + time.Duration(rng.IntN(11))*100*time.Millisecond,
		TrailingLogs: 16 + uint64(rng.IntN(64-16+1)),
	}
	// Drawn last, so the three above are what they were before it.
	n := uint64(minRetention + rng.IntN(maxRetention-minRetention+1))
	if index%2 == 0 {
		s.RetentionMaxMessages = n
	}
	return s
}

// The retention limits the even-numbered schedules draw from: at the
// default --rate (200 a second per source) a store starts releasing a few
// seconds into the schedule, before most faults, and the checker still
// verifies the newest few hundred acknowledged messages of every source.
const (
	minRetention = 400
	maxRetention = 1500
)

// SnapshotLog counts what the daemons' logs (raft's lines, routed into
// them) say about snapshots over a schedule.
type SnapshotLog struct {
	// Taken counts snapshots a store took of its own state ("snapshot
	// complete up to"): with reference snapshots, a record of the applied
	// index after which the log is compacted.
	Taken int `json:"taken"`
	// Sent counts snapshots a leader began to send to a member its log no
	// longer reached ("installing snapshot on").
	Sent int `json:"sent"`
	// SendFailed counts sends that failed on the leader's side ("failed to
	// install snapshot" naming a peer, "failed to open snapshot"): the
	// member died or was cut off mid-transfer, or the leader could not copy
	// its repository.
	SendFailed int `json:"send_failed"`
	// Installed counts snapshots a member received and restored ("Installed
	// remote snapshot"): the install path ran to the end.
	Installed int `json:"installed"`
	// ReceiveFailed counts installs that failed on the member's side
	// (copying, a short read, restoring).
	ReceiveFailed int `json:"receive_failed"`
	// RestoredAtStart counts stores that found their repository behind
	// their latest snapshot at start (a received snapshot not yet
	// restored when the process died) and restored it then.
	RestoredAtStart int `json:"restored_at_start"`
	// Installs lists each completed install: which store, in which
	// incarnation of its host's daemon, when.
	Installs []SnapshotInstall `json:"installs,omitempty"`
}

// SnapshotInstall is one snapshot a member installed from its leader.
type SnapshotInstall struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	Store       string    `json:"store"`
	At          time.Time `json:"at"`
}

// add sums o into l.
func (l *SnapshotLog) add(o SnapshotLog) {
	l.Taken += o.Taken
	l.Sent += o.Sent
	l.SendFailed += o.SendFailed
	l.Installed += o.Installed
	l.ReceiveFailed += o.ReceiveFailed
	l.RestoredAtStart += o.RestoredAtStart
	l.Installs = append(l.Installs, o.Installs...)
}
