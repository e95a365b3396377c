package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Totals sums up a run; with --json it is the last line printed.
type Totals struct {
	Seed         int64          `json:"seed"`
	Schedules    int            `json:"schedules"`
	Faults       int            `json:"faults"`
	FaultKinds   map[string]int `json:"fault_kinds"`
	Acknowledged int            `json:"acknowledged"`
	Delivered    int            `json:"delivered"`
	Lost         int            `json:"lost"`
	Violations   int            `json:"violations"`
	Failed       []int          `json:"failed_schedules"`
	Kept         []string       `json:"kept"`
	Seconds      float64        `json:"seconds"`
	// LongestStallS is the longest a publisher went without a new stable
	// message, in seconds, over all schedules (availability, not safety).
	LongestStallS float64 `json:"longest_stall_s"`
	StallWhere    string  `json:"stall_where,omitempty"`
	Partitions    bool    `json:"partitions"`
	SlowDisks     bool    `json:"slow_disks"`
	// Lock is the stores' lock mode (--lock).
	Lock string `json:"lock"`
	// PublisherState says whether publishers kept a state file.
	PublisherState bool `json:"publisher_state"`
	// DefaultSnapshots says whether the stores ran with umstored's default
	// snapshot settings (--default-snapshots) rather than small ones.
	DefaultSnapshots bool `json:"default_snapshots"`
	// SnapshotInstalls counts snapshots members installed from their
	// leader over all schedules (raft's "Installed remote snapshot"): how
	// often the snapshot install path ran to the end. SnapshotSends,
	// SnapshotSendFailures and SnapshotsTaken count the leaders' attempts,
	// their failures (a member killed or cut off mid-transfer) and the
	// stores' own snapshots.
	SnapshotInstalls     int `json:"snapshot_installs"`
	SnapshotSends        int `json:"snapshot_sends"`
	SnapshotSendFailures int `json:"snapshot_send_failures"`
	SnapshotsTaken       int `json:"snapshots_taken"`
	// Snapshots lists each schedule's snapshot settings and counts.
	Snapshots []ScheduleSnapshots `json:"schedule_snapshots"`
	// PerKind is, for each kind of fault (and "none"), the run's count,
	// longest publish stall and restore times (see KindStats).
	PerKind map[string]*KindTotals `json:"per_kind"`
	// DurableHanded counts what the durable receivers were handed;
	// ReceiverRestarts their restarts (after a kill), Redelivered the
	// messages those restarts delivered again, and MaxRedelivery the
	// restart that delivered the most again.
	DurableHanded    int         `json:"durable_handed"`
	ReceiverRestarts int         `json:"receiver_restarts"`
	Redelivered      uint64      `json:"redelivered"`
	MaxRedelivery    *Redelivery `json:"max_redelivery,omitempty"`
	// MaxRedeliveryWindowS is the longest a message handed again had been
	// handed before its receiver was killed, in seconds.
	MaxRedeliveryWindowS float64 `json:"max_redelivery_window_s"`
	// RPPReleases counts the paced sources' releases the rpp rule judged,
	// RPPExcused those made while the paced receiver's hold may have
	// lapsed, RPPHeldBack the times a leader held a paced publisher back.
	RPPReleases int `json:"rpp_releases"`
	RPPExcused  int `json:"rpp_excused"`
	RPPHeldBack int `json:"rpp_held_back"`
}

// KindTotals is KindStats over a run, in seconds.
type KindTotals struct {
	Count         int     `json:"count"`
	LongestStallS float64 `json:"longest_stall_s"`
	StallWhere    string  `json:"stall_where,omitempty"`
	UnpacedStallS float64 `json:"unpaced_stall_s"` // KindStats.UnpacedStall
	Restores      int     `json:"restores"`
	Unrestored    int     `json:"unrestored"`
	RestoreMaxS   float64 `json:"restore_max_s"`
	RestoreMeanS  float64 `json:"restore_mean_s"`
	sum           KindStats
}

// ScheduleSnapshots is one schedule's snapshot settings (nil: umstored's
// defaults) and what its daemons logged about snapshots.
type ScheduleSnapshots struct {
	Schedule  int               `json:"schedule"`
	Settings  *SnapshotSettings `json:"settings"`
	Taken     int               `json:"taken"`
	Sent      int               `json:"sent"`
	Installed int               `json:"installed"`
	// Wipes counts the schedule's wipe-host, wipe-crash and replace-host
	// faults: each should end in snapshot installs when Settings are small.
	Wipes int `json:"wipes"`
}

func newTotals(opts options) *Totals {
	return &Totals{Seed: opts.Seed, FaultKinds: map[string]int{}, Failed: []int{}, Kept: []string{}, Partitions: opts.Partitions, SlowDisks: opts.SlowDisks, Lock: opts.Lock, PublisherState: opts.PublisherState,
		DefaultSnapshots: opts.DefaultSnapshots, Snapshots: []ScheduleSnapshots{}, PerKind: map[string]*KindTotals{}}
}

// add counts one schedule.
func (t *Totals) add(r scheduleResult) {
	if r.Interrupted {
		if r.Kept {
			t.Kept = append(t.Kept, r.Dir)
		}
		return
	}
	t.Schedules++
	t.Faults += r.Faults
	for k, n := range r.Kinds {
		t.FaultKinds[k] += n
	}
	if s := r.LongestStall.Seconds(); s > t.LongestStallS {
		t.LongestStallS, t.StallWhere = s, fmt.Sprintf("schedule %d: %s", r.Index, r.StallWhere)
	}
	for k, ks := range r.PerKind {
		kt := t.PerKind[k]
		if kt == nil {
			kt = &KindTotals{}
			t.PerKind[k] = kt
		}
		kt.sum.add(ks, fmt.Sprintf("schedule %d: ", r.Index))
		kt.Count, kt.Restores, kt.Unrestored, kt.StallWhere = kt.sum.Count, kt.sum.Restores, kt.sum.Unrestored, kt.sum.StallWhere
		kt.LongestStallS, kt.RestoreMaxS, kt.RestoreMeanS = kt.sum.LongestStall.Seconds(), kt.sum.RestoreMax.Seconds(), kt.sum.RestoreMean().Seconds()
		kt.UnpacedStallS = kt.sum.UnpacedStall.Seconds()
	}
	sl := r.SnapshotLog
	t.SnapshotInstalls += sl.Installed
	t.SnapshotSends += sl.Sent
	t.SnapshotSendFailures += sl.SendFailed
	t.SnapshotsTaken += sl.Taken
	t.Snapshots = append(t.Snapshots, ScheduleSnapshots{Schedule: r.Index, Settings: r.Snapshots, Taken: sl.Taken, Sent: sl.Sent, Installed: sl.Installed,
		Wipes: r.Kinds[string(WipeHost)] + r.Kinds[string(WipeCrash)] + r.Kinds[string(ReplaceHost)]})
	t.Acknowledged += r.Acknowledged
	t.Delivered += r.Delivered
	t.DurableHanded += r.DurableHanded
	for _, rd := range r.Redeliveries {
		t.ReceiverRestarts++
		t.Redelivered += rd.Count
		if t.MaxRedelivery == nil || rd.Count > t.MaxRedelivery.Count {
			t.MaxRedelivery = &rd
		}
		t.MaxRedeliveryWindowS = max(t.MaxRedeliveryWindowS, rd.Window.Seconds())
	}
	if r.RPP != nil {
		t.RPPReleases += r.RPP.Releases
		t.RPPExcused += r.RPP.Excused
		t.RPPHeldBack += r.RPP.HeldBack
	}
	t.Lost += r.Lost
	t.Violations += len(r.Violations)
	if len(r.Violations) > 0 || r.Lost > 0 {
		t.Failed = append(t.Failed, r.Index)
	}
	if r.Kept {
		t.Kept = append(t.Kept, r.Dir)
	}
}

// reproduceCommand is the command line that replays one schedule.
func reproduceCommand(opts options, index int) string {
	args := []string{"go run ./chaos", fmt.Sprintf("--seed %d", opts.Seed), fmt.Sprintf("--start %d", index), "--schedules 1", "--keep"}
	if opts.FaultsPerSchedule != 4 {
		args = append(args, fmt.Sprintf("--faults-per-schedule %d", opts.FaultsPerSchedule))
	}
	if opts.Sources != 2 {
		args = append(args, fmt.Sprintf("--sources %d", opts.Sources))
	}
	if !opts.Partitions {
		args = append(args, "--partitions=false")
	}
	if !opts.SlowDisks {
		args = append(args, "--slow-disks=false")
	}
	if !opts.PublisherState {
		args = append(args, "--publisher-state=false")
	}
	if opts.LongOutages {
		args = append(args, "--long-outages")
	}
	if opts.DefaultSnapshots {
		args = append(args, "--default-snapshots")
	}
	if !opts.PacedSource {
		args = append(args, "--paced-source=false")
	}
	if opts.Rate != 200 {
		args = append(args, fmt.Sprintf("--rate %d", opts.Rate))
	}
	if len(opts.Kinds) > 0 {
		var ks []string
		for _, k := range opts.Kinds {
			ks = append(ks, string(k))
		}
		args = append(args, "--kinds "+strings.Join(ks, ","))
	}
	if opts.Messages != 100000 {
		args = append(args, fmt.Sprintf("--messages %d", opts.Messages))
	}
	if opts.Lock == lockLease {
		args = append(args, "--lock "+lockLease)
	}
	return strings.Join(args, " ")
}

// printSchedule prints one schedule's outcome, and on a violation the
// evidence and how to replay it.
func printSchedule(w io.Writer, opts options, r scheduleResult) {
	verdict := "ok"
	switch {
	case r.Interrupted:
		verdict = "interrupted (not counted)"
	case len(r.Violations) > 0 || r.Lost > 0:
		verdict = "VIOLATION"
	}
	var kinds []string
	for k, n := range r.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "schedule %d: %s: faults %d (%s), acknowledged %d, delivered %d, lost %d, violations %d, longest stall %v, snapshot installs %d, %v\n",
		r.Index, verdict, r.Faults, strings.Join(kinds, " "), r.Acknowledged, r.Delivered, r.Lost, len(r.Violations), r.LongestStall.Round(100*time.Millisecond), r.SnapshotLog.Installed, r.Duration.Round(time.Second))
	sl := r.SnapshotLog
	fmt.Fprintf(w, "  snapshots (%s): taken %d, sent %d (failed %d), installed %d (failed %d), restored at start %d\n",
		r.Snapshots, sl.Taken, sl.Sent, sl.SendFailed, sl.Installed, sl.ReceiveFailed, sl.RestoredAtStart)
	if line := perKindLine(r.PerKind); line != "" {
		fmt.Fprintf(w, "  per kind: %s\n", line)
	}
	if len(r.Redeliveries) > 0 {
		var parts []string
		for _, rd := range r.Redeliveries {
			parts = append(parts, rd.String())
		}
		fmt.Fprintf(w, "  durable receivers: handed %d, restarts: %s\n", r.DurableHanded, strings.Join(parts, "; "))
	}
	if r.RPP != nil {
		fmt.Fprintf(w, "  rpp: %s\n", r.RPP)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  violation %s\n", v)
	}
	if verdict == "VIOLATION" {
		fmt.Fprintf(w, "  logs, data directories and history kept in %s\n  reproduce: %s\n", r.Dir, reproduceCommand(opts, r.Index))
	} else if r.Kept {
		fmt.Fprintf(w, "  kept in %s\n", r.Dir)
	}
}

// printTotals prints the run's totals: a summary line, and with --json one
// JSON object as the last line.
func printTotals(w io.Writer, opts options, t *Totals) {
	fmt.Fprintf(w, "chaos: seed %d: %d schedules, %d faults, %d acknowledged, %d lost, %d violations, %d snapshot installs in %.0fs\n",
		t.Seed, t.Schedules, t.Faults, t.Acknowledged, t.Lost, t.Violations, t.SnapshotInstalls, t.Seconds)
	if t.ReceiverRestarts > 0 {
		fmt.Fprintf(w, "durable receivers: %d restarts, %d messages delivered again (most in one restart: %s), longest redelivery window %.3fs\n",
			t.ReceiverRestarts, t.Redelivered, t.MaxRedelivery, t.MaxRedeliveryWindowS)
	}
	if t.RPPReleases > 0 || t.RPPHeldBack > 0 {
		fmt.Fprintf(w, "receiver-paced sources: %d releases checked (%d while the paced receiver's hold may have lapsed), publishers held back %d times\n", t.RPPReleases, t.RPPExcused, t.RPPHeldBack)
	}
	if len(t.PerKind) > 0 {
		fmt.Fprintf(w, "%-15s %6s %14s %14s %12s %12s %10s\n", "per kind", "count", "longest stall", "unpaced stall", "restore max", "restore mean", "unrestored")
		for _, k := range sortedKinds(t.PerKind) {
			kt := t.PerKind[k]
			fmt.Fprintf(w, "%-15s %6d %13.3fs %13.3fs %11.3fs %11.3fs %10d\n", k, kt.Count, kt.LongestStallS, kt.UnpacedStallS, kt.RestoreMaxS, kt.RestoreMeanS, kt.Unrestored)
		}
	}
	if opts.JSON {
		js, _ := json.Marshal(t)
		fmt.Fprintln(w, string(js))
	}
}

// perKindLine sums up a schedule's per-kind statistics on one line.
func perKindLine(m map[string]*KindStats) string {
	var parts []string
	for _, k := range sortedKinds(m) {
		ks := m[k]
		if k == noFault {
			parts = append(parts, fmt.Sprintf("%s (stall %v)", k, ks.LongestStall.Round(time.Millisecond)))
			continue
		}
		part := fmt.Sprintf("%s %d (stall %v, restore max %v", k, ks.Count, ks.LongestStall.Round(time.Millisecond), ks.RestoreMax.Round(100*time.Millisecond))
		if ks.Unrestored > 0 {
			part += fmt.Sprintf(", %d unrestored", ks.Unrestored)
		}
		parts = append(parts, part+")")
	}
	return strings.Join(parts, ", ")
}
