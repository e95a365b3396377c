package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanIsReproducible(t *testing.T) {
	cfg := planConfig{Faults: 6, Partitions: true, SlowDisks: true, Sources: []string{"s1", "s2"}}
	a := planSchedule(scheduleRand(42, 3), cfg)
	b := planSchedule(scheduleRand(42, 3), cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("one seed gave two plans:\n%v\n%v", a, b)
	}
	c := planSchedule(scheduleRand(42, 4), cfg)
	if reflect.DeepEqual(a, c) {
		t.Fatal("two schedules of a seed got the same plan")
	}
}

func TestPlanStaysWithinTheDesign(t *testing.T) {
	kinds := map[FaultKind]int{}
	for seed := int64(0); seed < 200; seed++ {
		for _, partitions := range []bool{true, false} {
			plan := planSchedule(scheduleRand(seed, 0), planConfig{Faults: 5, Partitions: partitions, SlowDisks: partitions, PreviousBin: partitions, Sources: []string{"s1", "s2"}})
			if len(plan) != 5 {
				t.Fatalf("seed %d: %d faults planned, want 5", seed, len(plan))
			}
			for _, f := range plan {
				kinds[f.Kind]++
				switch {
				case (f.Kind == Partition || f.Kind == SlowDisk || f.Kind == LostWrites || f.Kind == PowerCutAll || f.Kind == DiskFull || f.Kind == UpgradeHost) && !partitions:
					t.Fatalf("seed %d: %s was planned with it off", seed, f.Kind)
				case f.Kind == SlowDisk && (f.IOPS < 5 || f.IOPS > 50):
					t.Fatalf("seed %d: slow disk to %d writes/s", seed, f.IOPS)
				case f.Kind == KillPublisher && (f.Source == "" || f.Host != ""):
					t.Fatalf("seed %d: publisher fault %+v", seed, f)
				case f.Kind == KillReceiver && (f.Source == "" || f.Host != "" || f.AlsoKillReceiver != ""):
					t.Fatalf("seed %d: receiver fault %+v", seed, f)
				case f.AlsoKillReceiver != "" && (!f.hostFault() || f.ReceiverAt > f.Hold):
					t.Fatalf("seed %d: nested receiver kill out of its host fault: %+v", seed, f)
				case f.Takeover && f.Kind != KillReceiver && f.AlsoKillReceiver == "":
					t.Fatalf("seed %d: a new receiver session without a receiver kill: %+v", seed, f)
				case f.hostFault() && f.Kind != Partition && f.Kind != PowerCutAll && f.Host != "A" && f.Host != "B":
					t.Fatalf("seed %d: host fault without one host: %+v", seed, f)
				case f.AlsoKillPublisher != "" && (!f.hostFault() || f.PublisherAt > f.Hold):
					t.Fatalf("seed %d: nested publisher kill out of its host fault: %+v", seed, f)
				case f.Hold < 0 || f.Quiet <= 0:
					t.Fatalf("seed %d: bad durations: %+v", seed, f)
				case f.Kind == CorruptStore && (f.Stores < 1 || f.Stores > 2 || f.Seed == 0):
					t.Fatalf("seed %d: a corrupt-store of %d stores (at most 2 of the one host), seed %d", seed, f.Stores, f.Seed)
				case f.Kind == Stranger && f.Seed == 0:
					t.Fatalf("seed %d: a stranger without a seed", seed)
				case f.Kind == ClockJump && (f.ClockStep.Abs() < clockStepMin || f.ClockStep.Abs() > clockStepMax || f.ClockStep%time.Minute != 0 || f.Hold < 2*time.Second || f.Hold > 8*time.Second):
					t.Fatalf("seed %d: a clock-jump by %v for %v", seed, f.ClockStep, f.Hold)
				case f.Kind != ClockJump && (f.ClockStep != 0 || f.ClockThrough):
					t.Fatalf("seed %d: a clock step in a %s", seed, f.Kind)
				}
			}
		}
	}
	for _, k := range allKinds() {
		if kinds[k] == 0 {
			t.Errorf("fault %s never planned in 400 schedules", k)
		}
	}
}

// With --lock lease the kinds that keep a daemon from renewing its leases
// for longer than they last are not drawn; the others are, with the plans
// of runs without it unchanged.
func TestPlanWithLeaseLocks(t *testing.T) {
	cfg := planConfig{Faults: 6, Partitions: true, SlowDisks: true, PreviousBin: true, Sources: []string{"s1", "s2"}}
	lease := cfg
	lease.LeaseLocks = true
	kinds := map[FaultKind]bool{}
	for seed := int64(0); seed < 200; seed++ {
		for _, f := range planSchedule(scheduleRand(seed, 0), lease) {
			kinds[f.Kind] = true
			if kindOf(f.Kind).OutlastsLease {
				t.Fatalf("seed %d: %s drawn with --lock lease", seed, f.Kind)
			}
		}
	}
	for _, k := range allKinds() {
		if !kindOf(k).OutlastsLease && !kinds[k] {
			t.Errorf("%s never drawn with --lock lease in 200 schedules", k)
		}
	}
	if !kindOf(PauseHost).OutlastsLease || !kindOf(SlowDisk).OutlastsLease {
		t.Error("pause-host and slow-disk outlast a lease")
	}
	if _, err := parseFlags([]string{"--lock", "lease", "--kinds", "kill-host,pause-host"}, io.Discard); err == nil {
		t.Error("--lock lease --kinds pause-host was accepted")
	}
	if _, err := parseFlags([]string{"--lock", "nfs"}, io.Discard); err == nil {
		t.Error("--lock nfs was accepted")
	}
}

// A clock-jump says what it steps, and puts the clock back.
func TestClockJumpDescription(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: ClockJump, Host: "A", Hold: 3 * time.Second, ClockStep: 90 * time.Minute}, "clock-jump host A by +1h30m0s, then back for 3s"},
		{Fault{Kind: ClockJump, Host: "B", Hold: 5 * time.Second, ClockStep: -7 * time.Minute, ClockThrough: true}, "clock-jump host B by -7m0s, then to +7m0s, then back for 5s"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestLongOutages(t *testing.T) {
	cfg := planConfig{Faults: 6, Partitions: true, SlowDisks: true, Sources: []string{"s1", "s2"}}
	long := 0
	for seed := int64(0); seed < 50; seed++ {
		for _, f := range planSchedule(scheduleRand(seed, 0), cfg) {
			if f.Hold >= 35*time.Second {
				t.Fatalf("seed %d: a long outage without --long-outages: %v", seed, f)
			}
		}
		cfg := cfg
		cfg.LongOutages = true
		for _, f := range planSchedule(scheduleRand(seed, 0), cfg) {
			if f.Hold >= 35*time.Second {
				long++
				if f.Kind != KillHost && f.Kind != PauseHost {
					t.Fatalf("seed %d: long %s", seed, f.Kind)
				}
			}
		}
	}
	if long == 0 {
		t.Fatal("no long outage drawn in 50 schedules")
	}
}

func TestPlanOnlyKinds(t *testing.T) {
	only := []FaultKind{PauseHost, KillPublisher}
	for seed := int64(0); seed < 50; seed++ {
		for _, f := range planSchedule(scheduleRand(seed, 0), planConfig{Faults: 4, Partitions: true, SlowDisks: true, Sources: []string{"s1"}, Only: only}) {
			if f.Kind != PauseHost && f.Kind != KillPublisher {
				t.Fatalf("seed %d: drew %s outside %v", seed, f.Kind, only)
			}
			if f.AlsoKillReceiver != "" {
				t.Fatalf("seed %d: a receiver kill inside %v without kill-receiver among the kinds", seed, f)
			}
		}
	}
	// With kill-receiver, some host faults kill a receiver too.
	nested := 0
	for seed := int64(0); seed < 50; seed++ {
		for _, f := range planSchedule(scheduleRand(seed, 0), planConfig{Faults: 4, Sources: []string{"s1", "s2"}, Only: []FaultKind{KillHost, KillReceiver}}) {
			if f.AlsoKillReceiver != "" {
				nested++
			}
		}
	}
	if nested == 0 {
		t.Fatal("no receiver kill inside a host fault in 50 schedules")
	}
}

func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // exited but not reaped: a zombie
	}
	if processAlive(pid) {
		t.Fatal("an exited, unreaped child counts as alive")
	}
	_ = cmd.Wait()
}

func TestTagPid(t *testing.T) {
	for name, want := range map[string]int{
		"/tmp/x/schedule-000/umstore-chaos-disk-1234-A": 1234,
		"umstore-chaos-disk-77-B":                       77,
		"umstore-chaos-disk-x-B":                        -1,
		"/mnt/other":                                    -1,
	} {
		pid, ok := tagPid(name)
		if (want < 0 && ok) || (want >= 0 && (!ok || pid != want)) {
			t.Errorf("tagPid(%q) = %d %v, want %d", name, pid, ok, want)
		}
	}
}

// TestShortVariantPlan pins the short variant's plan: its seed is the
// first whose schedules draw every kind in shortKinds within the time
// budget (see shortVariantSeed). A change to the planner or to shortKinds that changes
// the plan must pin it again: the failure prints the seed and plan to paste.
func TestShortVariantPlan(t *testing.T) {
	want := []string{
		"wipe-host host B for 3.6s",
		"power-cut-all for 1.3s (+ kill-publisher s1 at 200ms) (+ kill-receiver s2 at 100ms)",
		"slow-disk host A to 26 writes/s for 2.1s",
		"lost-writes host A for 2.3s (+ kill-publisher s2 at 1.2s)",
		"partition A|B for 5.9s",
		"kill-host host A for 2.4s",
		"overlap host A partition+restart for 2.8s",
		"disk-full host B for 3.2s",
		"pause-host host A for 3s (+ kill-receiver s1 at 2.1s)",
		"stranger host A for 4.2s",
		"clock-jump host B by +50m0s, then to -50m0s, then back for 4.5s (+ kill-publisher s2 at 1.9s)",
		"corrupt-store host A 2 stores after kill -9 for 2.9s (+ kill-receiver s1 at 1.1s, new session)",
		"kill-host host A for 2.3s (+ kill-receiver s2 at 1.1s)",
		"wipe-host host B for 2.6s",
		"replace-host host B for 3.9s",
		"wipe-crash host B for 1.5s (+ kill-receiver s2 at 700ms)",
	}
	if seed := shortVariantSeed(shortKinds); seed != shortSeed {
		t.Errorf("the first seed that draws every kind in shortKinds is %d, not shortSeed %d", seed, shortSeed)
	}
	got := shortVariantPlan(shortSeed)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the short variant's plan changed; pin shortSeed %d and this plan:\n%s", shortVariantSeed(shortKinds), quoted(shortVariantPlan(shortVariantSeed(shortKinds))))
	}
}

// TestShortKindsWorkOnCI: the short variant and its pending list name
// every kind that needs no more than a CI machine offers, each once.
func TestShortKindsWorkOnCI(t *testing.T) {
	seen := map[FaultKind]bool{}
	for _, k := range shortKinds {
		if seen[k] || shortKindsPending[k] != "" {
			t.Errorf("%s is in shortKinds twice, or also pending", k)
		}
		seen[k] = true
	}
	for k := range shortKindsPending {
		seen[k] = true
	}
	for _, k := range allKinds() {
		if !seen[k] {
			t.Errorf("kind %s is neither drawn by the short variant nor listed as pending", k)
		}
	}
}

func quoted(ss []string) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "\t\t%q,\n", s)
	}
	return b.String()
}

// TestOverlapDrawsEveryPair: an overlap draws each of its pairs, the
// partition's only with partitions on and the power cut's only with disks.
func TestOverlapDrawsEveryPair(t *testing.T) {
	for _, tc := range []struct {
		partitions, disks bool
		want              []string
	}{
		{true, true, []string{pairPauseCatchUp, pairPartitionRestart, pairPowerCutReplace}},
		{true, false, []string{pairPauseCatchUp, pairPartitionRestart}},
		{false, true, []string{pairPauseCatchUp, pairPowerCutReplace}},
		{false, false, []string{pairPauseCatchUp}},
	} {
		pairs := map[string]int{}
		for seed := int64(0); seed < 50; seed++ {
			for _, f := range planSchedule(scheduleRand(seed, 0), planConfig{Faults: 4, Partitions: tc.partitions, SlowDisks: tc.disks, Sources: []string{"s1"}, Only: []FaultKind{Overlap}}) {
				if f.Kind != Overlap || (f.Host != "A" && f.Host != "B") {
					t.Fatalf("seed %d: %+v", seed, f)
				}
				pairs[f.Pair]++
			}
		}
		if len(pairs) != len(tc.want) {
			t.Errorf("partitions %v, disks %v: pairs drawn %v, want %v", tc.partitions, tc.disks, pairs, tc.want)
		}
		for _, p := range tc.want {
			if pairs[p] == 0 {
				t.Errorf("partitions %v, disks %v: pairs drawn %v, want %v", tc.partitions, tc.disks, pairs, tc.want)
			}
		}
	}
}
