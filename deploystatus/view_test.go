package deploystatus

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

// twoHosts is the 2+1 / 1+2 layout on two addresses:
//
//	host A: G1S1 G1S2 G2S1
//	host B: G1S3 G2S2 G2S3
func twoHosts(t *testing.T) *placement.Deployment {
	t.Helper()
	d := placement.Dev("127.0.0.1", 30000)
	d.Hosts[1].Address = "127.0.0.3"
	d.Hosts[0].Address = "127.0.0.2"
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

func clientAddr(t *testing.T, d *placement.Deployment, store string) string {
	t.Helper()
	ref, ok := d.StoreByName(store)
	if !ok {
		t.Fatalf("no store %s", store)
	}
	return ref.ClientAddr()
}

func TestClassify(t *testing.T) {
	tests := []struct {
		raft                        string
		hasState, catching, waiting bool
		want                        string
	}{
		{"Leader", true, false, false, "leader"},
		{"Follower", true, false, false, "up"},
		{"Candidate", true, false, false, "candidate"},
		{"Follower", false, true, false, "catching-up"},
		{"starting", false, false, true, "waiting"},
		{"starting", false, false, false, "empty"},
		{"starting", true, false, false, "starting"},
		{"Shutdown", true, false, false, "stopped"},
		{"failed", true, false, false, "failed"},
		{"failed", false, true, false, "failed"},
		{"refused", false, false, false, "refused"},
		{"refused", false, false, true, "refused"},
	}
	for _, tt := range tests {
		if got := classify(tt.raft, tt.hasState, tt.catching, tt.waiting); got != tt.want {
			t.Errorf("classify(%q, state %v, catching up %v, waiting %v) = %q, want %q", tt.raft, tt.hasState, tt.catching, tt.waiting, got, tt.want)
		}
	}
}

// Host A's daemon sees its own stores from their status and host B's by
// probing: B is down, so group 2 has no leader and group 1 leads on A.
func TestBuildViewHostDown(t *testing.T) {
	d := twoHosts(t)
	local := []storegroup.Status{
		{Name: "G1S1", Group: 1, State: "Leader", Leader: "G1S1", HasState: true, AppliedIndex: 5000,
			Sources: []storegroup.SourceStatus{{Name: "orders", HighSeq: 900, LowSeq: 1, Count: 900, Gaps: 1}},
			Repair:  storegroup.RepairStatus{Passes: 4, Pending: 12}},
		{Name: "G1S2", Group: 1, State: "Follower", Leader: "G1S1", HasState: true, AppliedIndex: 3000},
		{Name: "G2S1", Group: 2, State: "Candidate", HasState: true, AppliedIndex: 4000,
			Sources: []storegroup.SourceStatus{{Name: "orders", HighSeq: 800, LowSeq: 1, Count: 800}}},
	}
	down := errors.New("connection refused")
	remote := Round{Stores: map[string]ProbeResult{
		"G1S3": {Err: down}, "G2S2": {Err: down}, "G2S3": {Err: down},
	}}
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	v := Build(d, placement.Analyze(d), []string{"A"}, local, remote, now)

	want := map[string]string{"G1S1": "leader", "G1S2": "catching-up", "G1S3": "down", "G2S1": "candidate", "G2S2": "down", "G2S3": "down"}
	if len(v.Stores) != len(want) {
		t.Fatalf("%d stores, want %d: %+v", len(v.Stores), len(want), v.Stores)
	}
	for _, s := range v.Stores {
		if s.State != want[s.Name] {
			t.Errorf("%s: state %q, want %q", s.Name, s.State, want[s.Name])
		}
		if s.Local != (s.Host == "A") {
			t.Errorf("%s on host %s: local = %v", s.Name, s.Host, s.Local)
		}
		if s.State == "down" && s.Error != "connection refused" {
			t.Errorf("%s: error %q, want the probe's", s.Name, s.Error)
		}
	}
	if v.Groups[0].Leader != "G1S1" || v.Groups[1].Leader != "" {
		t.Errorf("leaders %q and %q, want G1S1 and none", v.Groups[0].Leader, v.Groups[1].Leader)
	}
	if v.Groups[0].Running != 2 || v.Groups[1].Running != 1 || v.Groups[0].Quorum != 2 {
		t.Errorf("running %d and %d (quorum %d), want 2 and 1 (2)", v.Groups[0].Running, v.Groups[1].Running, v.Groups[0].Quorum)
	}
	if v.Hosts[0].State != "up" || !v.Hosts[0].Local || v.Hosts[1].State != "down" || v.Hosts[1].Local {
		t.Errorf("hosts: %+v", v.Hosts)
	}
	if !v.Publishing || v.Reason != "1 of 2 groups have a leader; intergroup any needs at least 1" {
		t.Errorf("publishing %v (%s)", v.Publishing, v.Reason)
	}
	g1, g2 := v.Groups[0], v.Groups[1]
	if g1.SourcesFrom != "G1S1" || len(g1.Sources) != 1 || g1.Sources[0].Gaps != 1 || g1.Repair == nil || g1.Repair.Pending != 12 {
		t.Errorf("group 1 sources: %+v from %s, repair %+v", g1.Sources, g1.SourcesFrom, g1.Repair)
	}
	// Without a leader, the sources are a local member's, and repair is unknown.
	if g2.SourcesFrom != "G2S1" || len(g2.Sources) != 1 || g2.Sources[0].HighSeq != 800 || g2.Repair != nil {
		t.Errorf("group 2 sources: %+v from %s, repair %+v", g2.Sources, g2.SourcesFrom, g2.Repair)
	}
	if v.Time != "2025-01-02T03:04:05Z" || v.Deployment != "dev" || v.Intergroup != "any" || len(v.Analysis.HostLosses) != 2 {
		t.Errorf("header: %s %s %s, %d host losses", v.Time, v.Deployment, v.Intergroup, len(v.Analysis.HostLosses))
	}
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("the view does not marshal: %v", err)
	}
}

// Stores of other processes are described by their probe replies; a remote
// leader's sources come from it, and leader addresses become names.
func TestBuildViewRemoteStores(t *testing.T) {
	d := twoHosts(t)
	leader2 := clientAddr(t, d, "G2S2")
	probe := func(name, state string, applied uint64) ProbeResult {
		ref, _ := d.StoreByName(name)
		return ProbeResult{Reply: &wire.ProbeReply{Store: name, Group: ref.Group, HasState: true, State: state, Leader: leader2, AppliedIndex: applied, LastIndex: applied}}
	}
	remote := Round{
		Stores: map[string]ProbeResult{
			"G1S1": probe("G1S1", "Leader", 10),
			"G1S2": probe("G1S2", "Follower", 10),
			"G2S1": {Reply: &wire.ProbeReply{Store: "G2S1", Group: 2, State: "starting", CatchingUp: true, Leader: leader2}},
			"G1S3": probe("G1S3", "Follower", 10),
			"G2S2": probe("G2S2", "Leader", 70),
			"G2S3": {Reply: &wire.ProbeReply{Store: "G2S3", Group: 2, State: "failed", HasState: true, Leader: leader2}},
		},
		Sources: map[int]LeaderSources{2: {From: "G2S2", Sources: []wire.SourceState{{Name: "s", HighSeq: 9, LowSeq: 3, Count: 5, Gaps: []wire.Range{{From: 4, To: 5}, {From: 7, To: 7}}}}}},
	}
	v := Build(d, placement.Analyze(d), nil, nil, remote, time.Now())
	want := map[string]string{"G1S1": "leader", "G1S2": "up", "G1S3": "up", "G2S1": "catching-up", "G2S2": "leader", "G2S3": "failed"}
	for _, s := range v.Stores {
		if s.State != want[s.Name] || s.Local {
			t.Errorf("%s: state %q local %v, want %q, not local", s.Name, s.State, s.Local, want[s.Name])
		}
		if s.Leader != "G2S2" {
			t.Errorf("%s: leader %q, want the name G2S2 for %s", s.Name, s.Leader, leader2)
		}
	}
	g2 := v.Groups[1]
	if g2.Leader != "G2S2" || g2.SourcesFrom != "G2S2" || len(g2.Sources) != 1 || g2.Sources[0].Gaps != 2 || g2.Sources[0].LowSeq != 3 {
		t.Errorf("group 2: %+v", g2)
	}
	if len(v.Groups[0].Sources) != 0 || v.Groups[0].SourcesFrom != "" {
		t.Errorf("group 1 has sources although its leader did not give them: %+v", v.Groups[0])
	}
	if v.Hosts[0].State != "up" || v.Hosts[1].State != "up" || len(v.ServedBy) != 0 {
		t.Errorf("hosts %+v, served by %v", v.Hosts, v.ServedBy)
	}
}

func TestPublishingPossible(t *testing.T) {
	tests := []struct {
		intergroup    string
		withLeader, n int
		want          bool
	}{
		{"any", 1, 2, true}, {"any", 0, 2, false},
		{"all-active", 1, 2, true},
		{"majority", 1, 2, false}, {"majority", 2, 3, true},
		{"all", 1, 2, false}, {"all", 2, 2, true},
	}
	for _, tt := range tests {
		if got := publishingPossible(tt.intergroup, tt.withLeader, tt.n); got != tt.want {
			t.Errorf("publishingPossible(%s, %d of %d) = %v, want %v", tt.intergroup, tt.withLeader, tt.n, got, tt.want)
		}
	}
}
