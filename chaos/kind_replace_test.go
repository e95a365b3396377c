package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// replace-host is drawn by --kinds replace-host and by random schedules,
// hits one host at a time (as every host fault: one fault at a time, the
// deployment restored after each), for 1-5 s, and a publisher killed
// inside it is killed within its hold.
func TestPlanReplaceHost(t *testing.T) {
	hosts := map[string]int{}
	nested := 0
	for seed := int64(0); seed < 100; seed++ {
		plan := planSchedule(scheduleRand(seed, 0), planConfig{Faults: 3, Partitions: true, SlowDisks: true, Sources: []string{"s1", "s2"}, Only: []FaultKind{ReplaceHost}})
		if len(plan) != 3 {
			t.Fatalf("seed %d: %d faults planned, want 3", seed, len(plan))
		}
		for _, f := range plan {
			switch {
			case f.Kind != ReplaceHost:
				t.Fatalf("seed %d: drew %s with --kinds replace-host", seed, f.Kind)
			case f.Host != "A" && f.Host != "B":
				t.Fatalf("seed %d: a replace-host of no one host: %+v", seed, f)
			case f.Hold < time.Second || f.Hold > 5*time.Second:
				t.Fatalf("seed %d: a replace-host held %v", seed, f.Hold)
			case !f.hostFault():
				t.Fatalf("seed %d: a replace-host is not followed by a restoration", seed)
			case f.AlsoKillReceiver != "":
				t.Fatalf("seed %d: a receiver kill without kill-receiver among the kinds: %+v", seed, f)
			case f.AlsoKillPublisher != "" && f.PublisherAt > f.Hold:
				t.Fatalf("seed %d: nested publisher kill out of the fault: %+v", seed, f)
			case !strings.HasPrefix(f.String(), "replace-host host "+f.Host+" for "):
				t.Fatalf("seed %d: described as %q", seed, f)
			}
			hosts[f.Host]++
			if f.AlsoKillPublisher != "" {
				nested++
			}
		}
	}
	if hosts["A"] == 0 || hosts["B"] == 0 || nested == 0 {
		t.Fatalf("in 300 replacements: host A %d, host B %d, with a publisher kill %d", hosts["A"], hosts["B"], nested)
	}
	// Random schedules of every kind draw it too, and so does the short
	// variant; schedules of other kinds only never do.
	drawn := 0
	others := planConfig{Faults: 5, Partitions: true, SlowDisks: true, Sources: []string{"s1", "s2"}, Only: []FaultKind{KillHost, WipeHost, PauseHost, Partition}}
	for seed := int64(0); seed < 100; seed++ {
		for _, f := range planSchedule(scheduleRand(seed, 0), planConfig{Faults: 5, Partitions: true, SlowDisks: true, Sources: []string{"s1", "s2"}}) {
			if f.Kind == ReplaceHost {
				drawn++
			}
		}
		for _, f := range planSchedule(scheduleRand(seed, 0), others) {
			if f.Kind == ReplaceHost {
				t.Fatalf("seed %d: a schedule of other kinds drew replace-host", seed)
			}
		}
	}
	if drawn == 0 {
		t.Fatal("no replace-host in 100 random schedules of every kind")
	}
	if !slices.Contains(shortKinds, ReplaceHost) {
		t.Fatal("the short variant does not draw replace-host")
	}
	if spec := kindOf(ReplaceHost); spec.LongOutage || spec.Needs != needNothing || spec.Prepare == nil {
		t.Fatalf("replace-host spec: %+v", spec)
	}
}

// A replaced host moves to the first free address of 127.0.0.5 and up that
// no host is at, so replacing one host again and again alternates between
// two addresses, and the stranger's address is never a host's.
func TestNextAddress(t *testing.T) {
	all := func(string) bool { return true }
	cases := []struct {
		name   string
		now    map[string]string
		host   string
		usable func(string) bool
		want   string // "" = an error
	}{
		{name: "first replacement", now: map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}, host: "A", usable: all, want: "127.0.0.5"},
		{name: "the same host again", now: map[string]string{"A": "127.0.0.5", "B": "127.0.0.3"}, host: "A", usable: all, want: "127.0.0.6"},
		{name: "and again: back to the first it left", now: map[string]string{"A": "127.0.0.6", "B": "127.0.0.3"}, host: "A", usable: all, want: "127.0.0.5"},
		{name: "the other host", now: map[string]string{"A": "127.0.0.5", "B": "127.0.0.3"}, host: "B", usable: all, want: "127.0.0.6"},
		{name: "both moved", now: map[string]string{"A": "127.0.0.5", "B": "127.0.0.6"}, host: "A", usable: all, want: "127.0.0.7"},
		{name: "ports taken there", now: map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}, host: "A", usable: func(a string) bool { return a != "127.0.0.5" }, want: "127.0.0.6"},
		{name: "nowhere to go", now: map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}, host: "A", usable: func(string) bool { return false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nextAddress(tc.now, tc.host, func(a string) bool {
				if a == strangerAddr {
					t.Fatalf("asked about the stranger's address %s", a)
				}
				return tc.usable(a)
			})
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %s", got, err, tc.want)
			}
		})
	}
}

// A client's deployment file is good while it places some host where it
// is (the product's redirects need one listed store to answer); the
// harness hands a client the new file only when it would place none.
func TestPlacesAny(t *testing.T) {
	planned := &deployFile{Addrs: map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}}
	edited := &deployFile{Addrs: map[string]string{"A": "127.0.0.5", "B": "127.0.0.3"}}
	cases := []struct {
		name string
		file *deployFile
		now  map[string]string
		want bool
	}{
		{"nothing moved", planned, map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}, true},
		{"A replaced: B is where the planned file says", planned, map[string]string{"A": "127.0.0.5", "B": "127.0.0.3"}, true},
		{"both replaced: the planned file places no one", planned, map[string]string{"A": "127.0.0.5", "B": "127.0.0.6"}, false},
		{"A replaced twice: B still there", edited, map[string]string{"A": "127.0.0.6", "B": "127.0.0.3"}, true},
		{"B replaced, A back where the edited file says", edited, map[string]string{"A": "127.0.0.5", "B": "127.0.0.6"}, true},
		{"both elsewhere", edited, map[string]string{"A": "127.0.0.6", "B": "127.0.0.7"}, false},
	}
	for _, tc := range cases {
		if got := tc.file.placesAny(tc.now); got != tc.want {
			t.Errorf("%s: placesAny = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A replaced host keeps its name, data directory, disk and log; its
// address, its admin server's address (same port) and its deployment
// file change, and only while it is stopped.
func TestHostMoveTo(t *testing.T) {
	h := &host{name: "A", addr: "127.0.0.2", admin: "127.0.0.2:12000", deploy: "/x/deployment.yaml", dataDir: "/x/A", logPath: "/x/A.log"}
	from, err := h.moveTo("127.0.0.5", "/x/deployment-1-A.yaml")
	if err != nil || from != "127.0.0.2" {
		t.Fatalf("moveTo = %q %v", from, err)
	}
	if h.address() != "127.0.0.5" || h.adminAddr() != "127.0.0.5:12000" || h.deployFile() != "/x/deployment-1-A.yaml" || h.dataDir != "/x/A" || h.logPath != "/x/A.log" {
		t.Fatalf("after the move: %s %s %s %s %s", h.address(), h.adminAddr(), h.deployFile(), h.dataDir, h.logPath)
	}
	h.cmd = &exec.Cmd{}
	if _, err := h.moveTo("127.0.0.6", "/x/deployment-2-A.yaml"); err == nil || h.address() != "127.0.0.5" {
		t.Fatalf("a running host moved: %v, at %s", err, h.address())
	}
}
