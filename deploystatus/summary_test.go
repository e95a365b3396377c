package deploystatus

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

// A store says the same about itself whether the observer runs it (its
// status) or probes it (its reply), and gets the same state either way.
// Before the two were one model, `umstored status` called a refused store
// "refused" and the status page called it "empty"; the page also had
// "candidate" and "stopped" where status said "up".
func TestLocalAndProbedStoresAgree(t *testing.T) {
	d := twoHosts(t)
	for _, tc := range []struct {
		raftState string
		hasState  bool
		catching  bool
		want      string
	}{
		{"refused", false, false, StateRefused},
		{"failed", true, false, StateFailed},
		{"Leader", true, false, StateLeader},
		{"Follower", false, true, StateCatchingUp},
		{"starting", false, false, StateEmpty},
		{"starting", true, false, StateStarting},
		{"Shutdown", true, false, StateStopped},
		{"Candidate", true, false, StateCandidate},
		{"Follower", true, false, StateUp},
	} {
		status := storegroup.Status{Name: "G1S1", Group: 1, State: tc.raftState, HasState: tc.hasState, CatchingUp: tc.catching}
		reply := &wire.ProbeReply{Store: "G1S1", Group: 1, State: tc.raftState, HasState: tc.hasState, CatchingUp: tc.catching}
		asLocal := Build(d, nil, []string{"A"}, []storegroup.Status{status}, Round{}, time.Now())
		asRemote := Build(d, nil, nil, nil, Round{Stores: map[string]ProbeResult{"G1S1": {Reply: reply}}}, time.Now())
		local, remote := asLocal.Stores[0], asRemote.Stores[0]
		if local.Name != "G1S1" || remote.Name != "G1S1" {
			t.Fatalf("first store: %s and %s", local.Name, remote.Name)
		}
		if local.State != tc.want || remote.State != tc.want {
			t.Errorf("%s (state %v, catching up %v): run here %q, probed %q; want %q both",
				tc.raftState, tc.hasState, tc.catching, local.State, remote.State, tc.want)
		}
	}
}

// The summary keeps the JSON of `umstored status --json`: its keys, a
// group's sources null when no leader told them, the states, the reason.
func TestSummaryJSON(t *testing.T) {
	d := twoHosts(t)
	reply := func(name, state string, applied uint64) ProbeResult {
		ref, _ := d.StoreByName(name)
		return ProbeResult{Reply: &wire.ProbeReply{Store: name, Group: ref.Group, GroupID: "g", HasState: true, State: state, AppliedIndex: applied, LastIndex: applied}}
	}
	round := Round{
		Stores: map[string]ProbeResult{
			"G1S1": reply("G1S1", "Leader", 5000),
			"G1S2": reply("G1S2", "Follower", 3000),
			"G1S3": reply("G1S3", "Follower", 4500),
			"G2S1": {Reply: &wire.ProbeReply{Store: "G2S1", Group: 2, State: "refused"}},
			"G2S2": {Err: errors.New("connection refused")},
			"G2S3": {Err: errors.New("connection refused")},
		},
		Sources: map[int]LeaderSources{1: {From: "G1S1", Sources: []wire.SourceState{{Name: "s", HighSeq: 9, LowSeq: 2, Count: 8, Gaps: []wire.Range{{From: 5, To: 5}}}}}},
	}
	s := Build(d, nil, nil, nil, round, time.Now()).Summary()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if keys := sortedKeys(got); !reflect.DeepEqual(keys, []string{"deployment", "groups", "intergroup", "policy_digest", "publishing", "reason"}) {
		t.Errorf("top-level keys %v", keys)
	}
	groups := got["groups"].([]any)
	g1, g2 := groups[0].(map[string]any), groups[1].(map[string]any)
	if keys := sortedKeys(g1); !reflect.DeepEqual(keys, []string{"index", "leader", "leader_host", "placement", "preferred_host", "sources", "stores"}) {
		t.Errorf("group keys %v", keys)
	}
	if g2["sources"] != nil {
		t.Errorf("group 2 has no leader, but its sources are %v, want null", g2["sources"])
	}
	src := g1["sources"].([]any)[0].(map[string]any)
	if keys := sortedKeys(src); !reflect.DeepEqual(keys, []string{"count", "gaps", "high_seq", "name", "oldest_seq"}) {
		t.Errorf("source keys %v", keys)
	}
	up := g1["stores"].([]any)[2].(map[string]any)
	if keys := sortedKeys(up); !reflect.DeepEqual(keys, []string{"address", "applied_index", "format_level", "group_id", "host", "name", "state"}) {
		t.Errorf("store keys %v", keys)
	}
	down := g2["stores"].([]any)[1].(map[string]any)
	if keys := sortedKeys(down); !reflect.DeepEqual(keys, []string{"address", "applied_index", "error", "host", "name", "state"}) {
		t.Errorf("keys of a store that did not answer: %v", keys)
	}

	want := [][]string{{"leader", "catching-up", "up"}, {"refused", "down", "down"}}
	for i, g := range s.Groups {
		for j, st := range g.Stores {
			if st.State != want[i][j] {
				t.Errorf("group %d store %s: %q, want %q", g.Index, st.Name, st.State, want[i][j])
			}
		}
	}
	if s.Groups[0].Leader != "G1S1" || s.Groups[1].Leader != "" || len(s.Groups[0].Sources) != 1 || s.Groups[0].Sources[0].Gaps != 1 {
		t.Errorf("groups: %+v", s.Groups)
	}
	if !strings.Contains(s.Groups[1].Stores[1].Error, "connection refused") {
		t.Errorf("a store that did not answer says %q", s.Groups[1].Stores[1].Error)
	}
	if !s.Publishing || s.Reason != "1 of 2 groups have a leader; intergroup any needs at least 1" || s.Intergroup != "any" || s.Deployment != "dev" {
		t.Errorf("summary: %+v", s)
	}
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// Whether publishing is possible, and the reason given, follow the
// deployment's intergroup behaviour through quorum.Behavior.
func TestPublishingReason(t *testing.T) {
	leaderIn := func(groups ...int) Round {
		r := Round{Stores: map[string]ProbeResult{}}
		for _, g := range groups {
			name := map[int]string{1: "G1S1", 2: "G2S2"}[g]
			r.Stores[name] = ProbeResult{Reply: &wire.ProbeReply{Store: name, Group: g, HasState: true, State: "Leader"}}
		}
		return r
	}
	for _, tc := range []struct {
		intergroup string
		round      Round
		publishing bool
		reason     string
	}{
		{placement.IntergroupAny, leaderIn(1), true, "1 of 2 groups have a leader; intergroup any needs at least 1"},
		{placement.IntergroupAny, leaderIn(), false, "0 of 2 groups have a leader; intergroup any needs at least 1"},
		{placement.IntergroupMajority, leaderIn(2), false, "1 of 2 groups have a leader; intergroup majority needs 2 of 2"},
		{placement.IntergroupMajority, leaderIn(1, 2), true, "2 of 2 groups have a leader; intergroup majority needs 2 of 2"},
		{placement.IntergroupAllActive, leaderIn(1), true, "1 of 2 groups have a leader; intergroup all-active needs every active group, at least 1"},
		{placement.IntergroupAllActive, leaderIn(), false, "0 of 2 groups have a leader; intergroup all-active needs every active group, at least 1"},
		{placement.IntergroupAll, leaderIn(1), false, "1 of 2 groups have a leader; intergroup all needs all 2"},
		{placement.IntergroupAll, leaderIn(1, 2), true, "2 of 2 groups have a leader; intergroup all needs all 2"},
	} {
		d := twoHosts(t)
		d.Stability.Intergroup = tc.intergroup
		v := Build(d, nil, nil, nil, tc.round, time.Now())
		if v.Publishing != tc.publishing || v.Reason != tc.reason || v.Intergroup != tc.intergroup {
			t.Errorf("%s: publishing %v (%s), want %v (%s)", tc.intergroup, v.Publishing, v.Reason, tc.publishing, tc.reason)
		}
	}
}

// A group with a member that answers with state, or with the group's
// identity, recovers by itself; stores that did not answer do not count.
func TestStoreWithState(t *testing.T) {
	d := twoHosts(t)
	round := Round{Stores: map[string]ProbeResult{
		"G1S1": {Reply: &wire.ProbeReply{Store: "G1S1", Group: 1, State: "refused"}},
		"G1S2": {Err: errors.New("connection refused")},
		"G2S1": {Reply: &wire.ProbeReply{Store: "G2S1", Group: 2, State: "starting", GroupID: "g2"}},
	}}
	v := Build(d, nil, nil, nil, round, time.Now())
	if st, ok := v.StoreWithState(1); ok {
		t.Errorf("group 1 has only empty and silent stores, but %s counts as having state", st.Name)
	}
	if st, ok := v.StoreWithState(2); !ok || st.Name != "G2S1" {
		t.Errorf("group 2: %+v %v, want G2S1, which knows the group's identity", st, ok)
	}
}

// Each group says where it prefers to be led from and whether its leader
// is there; a store running another policy than the file is named, with
// what differs.
func TestSummaryPlacementAndPolicy(t *testing.T) {
	d := twoHosts(t)
	file := d.Policy
	if file == (placement.Policy{}) {
		file = placement.DefaultPolicy()
	}
	other := file
	other.SourceActivityTimeout = placement.Duration(10 * time.Second)
	pong := func(p placement.Policy) *wire.Pong {
		return &wire.Pong{PolicyDigest: p.Digest(), Policy: p.Canonical()}
	}
	res := func(name, state string, p placement.Policy) ProbeResult {
		ref, _ := d.StoreByName(name)
		return ProbeResult{Reply: &wire.ProbeReply{Store: name, Group: ref.Group, HasState: true, State: state}, Pong: pong(p)}
	}
	round := Round{Stores: map[string]ProbeResult{
		"G1S1": res("G1S1", "Leader", file),
		"G1S2": res("G1S2", "Follower", file),
		"G1S3": res("G1S3", "Follower", other),
		"G2S1": res("G2S1", "Leader", file),
		"G2S2": res("G2S2", "Follower", file),
		"G2S3": {Reply: &wire.ProbeReply{Store: "G2S3", Group: 2, HasState: true, State: "Follower"}}, // an older store: no Pong
	}}
	s := Build(d, nil, nil, nil, round, time.Now()).Summary()
	g1, g2 := s.Groups[0], s.Groups[1]
	if g1.PreferredHost != "A" || g1.LeaderHost != "A" || g1.Placement != "led from its preferred host A" {
		t.Errorf("group 1: %+v", g1)
	}
	if g2.PreferredHost != "B" || g2.LeaderHost != "A" || !strings.Contains(g2.Placement, "moves to its preferred host B") {
		t.Errorf("group 2: %+v", g2)
	}
	if len(s.PolicyMismatch) != 1 || s.PolicyMismatch[0] != "G1S3: source-activity-timeout: 10s vs 30s" {
		t.Errorf("policy mismatch %q", s.PolicyMismatch)
	}
}

// A file whose policy writes a key as its "use the default" zero
// (repair-rate: 0) runs the same policy as the stores that read it: status
// compares the normalised policy, not the file's spelling of it.
func TestPolicyWrittenWithDefaultZeroesIsNoMismatch(t *testing.T) {
	d := twoHosts(t)
	d.Policy = placement.DefaultPolicy()
	d.Policy.RepairRate = 0
	running := d.Policy.WithDefaults() // what storehost.ApplyPolicy gives each store
	round := Round{Stores: map[string]ProbeResult{}}
	for _, ref := range d.Stores() {
		round.Stores[ref.Store.Name] = ProbeResult{
			Reply: &wire.ProbeReply{Store: ref.Store.Name, Group: ref.Group, HasState: true, State: "Follower"},
			Pong:  &wire.Pong{PolicyDigest: running.Digest(), Policy: running.Canonical()},
		}
	}
	if s := Build(d, nil, nil, nil, round, time.Now()).Summary(); len(s.PolicyMismatch) != 0 {
		t.Errorf("policy mismatch %q for a file that only spells a default as 0", s.PolicyMismatch)
	}
}

// Each store's binary and level, and each group's active level: a store
// that answers without a Pong, or with a Pong older than the fields, runs
// a release of level 1; the group's level is its leader's word.
func TestSummaryLevels(t *testing.T) {
	d := twoHosts(t)
	pong := func(level, active uint64, version string) *wire.Pong {
		return &wire.Pong{FormatLevel: level, ActiveLevel: active, Version: version}
	}
	reply := func(name, state string) *wire.ProbeReply {
		ref, _ := d.StoreByName(name)
		return &wire.ProbeReply{Store: name, Group: ref.Group, GroupID: "g", HasState: true, State: state, AppliedIndex: 9, LastIndex: 9}
	}
	round := Round{Stores: map[string]ProbeResult{
		"G1S1": {Reply: reply("G1S1", "Leader"), Pong: pong(2, 1, "dev (commit 0123456789ab, go1.26 linux/amd64)")},
		"G1S2": {Reply: reply("G1S2", "Follower"), Pong: pong(0, 0, "")},
		"G1S3": {Reply: reply("G1S3", "Follower")},
		"G2S1": {Reply: reply("G2S1", "Follower"), Pong: pong(2, 2, "dev")},
		"G2S2": {Reply: reply("G2S2", "Leader"), Pong: pong(2, 2, "dev")},
		"G2S3": {Err: errors.New("connection refused")},
	}}
	s := Build(d, nil, nil, nil, round, time.Now()).Summary()
	type row struct {
		level, active int
		version       string
	}
	want := [][]row{
		{{2, 1, "dev (commit 0123456789ab, go1.26 linux/amd64)"}, {1, 0, ""}, {1, 0, ""}},
		{{2, 2, "dev"}, {2, 2, "dev"}, {0, 0, ""}},
	}
	if got, want := s.Groups[0].LevelHeldBy, []string{"G1S2: reads level 1", "G1S3: reads level 1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("group 1 held back by %q, want %q", got, want)
	}
	if got := s.Groups[1].LevelHeldBy; len(got) != 0 {
		t.Errorf("group 2, at its newest level, held back by %q", got)
	}
	for i, g := range s.Groups {
		if wantActive := []int{1, 2}[i]; g.ActiveLevel != wantActive {
			t.Errorf("group %d active level %d, want %d", g.Index, g.ActiveLevel, wantActive)
		}
		for j, st := range g.Stores {
			if got := (row{st.FormatLevel, st.ActiveLevel, st.Version}); got != want[i][j] {
				t.Errorf("%s: %+v, want %+v", st.Name, got, want[i][j])
			}
		}
	}
}
