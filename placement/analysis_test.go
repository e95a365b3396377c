package placement

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"umstore/quorum"
)

func TestAnalyzeBehaviours(t *testing.T) {
	d, _, err := Plan(Request{Hosts: hosts(2), Groups: 3})
	if err != nil {
		t.Fatal(err)
	}
	// A is the majority host of groups 1 and 3, B of group 2.
	tests := []struct {
		intergroup string
		survives   bool
	}{
		{"any", true}, {"all-active", true}, {"majority", false}, {"all", false},
	}
	for _, tt := range tests {
		t.Run(tt.intergroup, func(t *testing.T) {
			d.Stability.Intergroup = tt.intergroup
			a := Analyze(d)
			if a.SurvivesAnyHostLoss != tt.survives {
				t.Errorf("survives = %v, want %v", a.SurvivesAnyHostLoss, tt.survives)
			}
			lossA, lossB := a.HostLosses[0], a.HostLosses[1]
			if !slices.Equal(lossA.GroupsWithQuorum, []int{2}) || !slices.Equal(lossB.GroupsWithQuorum, []int{1, 3}) {
				t.Errorf("groups with quorum: A lost %v, B lost %v", lossA.GroupsWithQuorum, lossB.GroupsWithQuorum)
			}
			wantA := Publishing{Any: true, Majority: false, AllActive: true, All: false}
			wantB := Publishing{Any: true, Majority: true, AllActive: true, All: false}
			if lossA.Publishing != wantA || lossB.Publishing != wantB {
				t.Errorf("publishing A lost %+v, B lost %+v", lossA.Publishing, lossB.Publishing)
			}
			hasWarning := slices.ContainsFunc(a.Warnings, func(w string) bool {
				return strings.Contains(w, "losing host A stops publishing")
			})
			if hasWarning == tt.survives {
				t.Errorf("warning about losing host A present=%v, want %v: %q", hasWarning, !tt.survives, a.Warnings)
			}
		})
	}
}

func TestAnalyzeHostWithQuorumOfEveryGroup(t *testing.T) {
	// Built by hand: host A holds two stores of each group.
	d := Dev("127.0.0.1", 14000)
	d.Hosts[1].Address = "127.0.0.3"
	d.Groups[1].Stores[1].Host = "A"
	a := Analyze(d)
	if a.SurvivesAnyHostLoss {
		t.Error("losing A leaves no group; publishing cannot go on")
	}
	want := "every group keeps its quorum on host A"
	if !slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q lack %q", a.Warnings, want)
	}
	if !strings.Contains(a.Render(), "Verdict: losing some single host stops publishing") {
		t.Errorf("render:\n%s", a.Render())
	}
}

func TestAnalysisJSON(t *testing.T) {
	a := Analyze(Dev("127.0.0.1", 14000))
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"deployment", "intergroup", "host_losses", "survives_any_host_loss", "warnings"} {
		if _, ok := back[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, data)
		}
	}
	for _, want := range []string{`"groups_with_quorum":[2]`, `"all-active":true`, `"publishing_goes_on":true`, `"stores_lost":["G1S1","G1S2","G2S1"]`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s: %s", want, data)
		}
	}
}

func TestRenderLayoutSpecExample(t *testing.T) {
	d, _, err := Plan(Request{Name: "demo", Hosts: []Host{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"host A (127.0.0.2)      host B (127.0.0.3)\n" +
		"  G1S1  G1S2              G1S3\n" +
		"  G2S1                    G2S2  G2S3\n"
	if got := RenderLayout(d); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestIntergroupNamesAreQuorums: the behaviour names placement accepts and
// shows are exactly those of package quorum, in the order of its constants,
// and Publishing.Under maps each name to the field the rule filled for it.
func TestIntergroupNamesAreQuorums(t *testing.T) {
	want := []quorum.Behavior{quorum.Any, quorum.Majority, quorum.AllActive, quorum.All}
	if len(IntergroupBehaviours) != len(want) {
		t.Fatalf("IntergroupBehaviours %v, want one per quorum behaviour", IntergroupBehaviours)
	}
	for i, name := range IntergroupBehaviours {
		b, err := quorum.ParseBehavior(name)
		if err != nil || b != want[i] {
			t.Errorf("%q parses as %v (%v), want %v", name, b, err, want[i])
		}
	}
	// One group of three kept out of three: only any and all-active go on.
	p := publishing(1, 3)
	for _, name := range IntergroupBehaviours {
		b, _ := quorum.ParseBehavior(name)
		if p.Under(name) != b.Met(1, 3, 1) {
			t.Errorf("Under(%q) = %v, the rule says %v", name, p.Under(name), b.Met(1, 3, 1))
		}
	}
	if p.Under("") || p.Under("quorum") {
		t.Error("an unknown behaviour must report false")
	}
}
