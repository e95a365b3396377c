package placement

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func hosts(n int) []Host {
	out := make([]Host, n)
	for i := range out {
		name := string(rune('A' + i))
		out[i] = Host{Name: name, Address: fmt.Sprintf("10.0.0.%d", i+1)}
	}
	return out
}

// storesPerHost returns, per host, the store names of each group joined by
// spaces and groups separated by " | ".
func storesPerHost(d *Deployment) map[string]string {
	out := map[string]string{}
	for _, h := range d.Hosts {
		var rows []string
		for _, g := range d.sortedGroups() {
			var names []string
			for _, s := range g.Stores {
				if s.Host == h.Name {
					names = append(names, s.Name)
				}
			}
			rows = append(rows, strings.Join(names, " "))
		}
		out[h.Name] = strings.Join(rows, " | ")
	}
	return out
}

func TestPlanTwoHostsTwoGroups(t *testing.T) {
	d, a, err := Plan(Request{Name: "demo", Hosts: []Host{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := storesPerHost(d)
	if got["A"] != "G1S1 G1S2 | G2S1" || got["B"] != "G1S3 | G2S2 G2S3" {
		t.Errorf("layout %v, want the 2+1 / 1+2 layout", got)
	}
	if !a.SurvivesAnyHostLoss {
		t.Error("publishing should survive the loss of either host")
	}
	for _, loss := range a.HostLosses {
		if len(loss.GroupsWithQuorum) != 1 {
			t.Errorf("losing %s: groups with quorum %v, want exactly one", loss.Host, loss.GroupsWithQuorum)
		}
	}
}

func TestPlanSpreadsOverThreeOrMoreHosts(t *testing.T) {
	for _, tc := range []struct{ hosts, groups, per int }{
		{3, 2, 3}, {3, 3, 5}, {4, 3, 3}, {5, 4, 3}, {3, 2, 7}, {4, 2, 9},
	} {
		t.Run(fmt.Sprintf("%dh-%dg-%ds", tc.hosts, tc.groups, tc.per), func(t *testing.T) {
			d, a, err := Plan(Request{Hosts: hosts(tc.hosts), Groups: tc.groups, StoresPerGroup: tc.per})
			if err != nil {
				t.Fatal(err)
			}
			for _, loss := range a.HostLosses {
				if len(loss.GroupsWithoutQuorum) != 0 {
					t.Errorf("losing %s costs groups %v their quorum; with %d hosts no host should hold a majority", loss.Host, loss.GroupsWithoutQuorum, tc.hosts)
				}
			}
			if !a.SurvivesAnyHostLoss || len(d.Groups) != tc.groups {
				t.Errorf("survives=%v groups=%d", a.SurvivesAnyHostLoss, len(d.Groups))
			}
		})
	}
}

func TestPlanTwoHostsRotatesMajority(t *testing.T) {
	for groups := 2; groups <= 7; groups++ {
		_, a, err := Plan(Request{Hosts: hosts(2), Groups: groups, StoresPerGroup: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, loss := range a.HostLosses {
			// The best possible: losing a host keeps at least half the groups (rounded down).
			if len(loss.GroupsWithQuorum) < groups/2 {
				t.Errorf("%d groups: losing %s keeps only %v", groups, loss.Host, loss.GroupsWithQuorum)
			}
		}
	}
}

func TestPlanDefaults(t *testing.T) {
	d, _, err := Plan(Request{Hosts: hosts(2)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "umstore" || len(d.Groups) != 2 || len(d.Groups[0].Stores) != 3 || d.Groups[0].Stores[0].RaftPort != 14011 || d.Groups[0].Stores[0].ClientPort != 15011 {
		t.Errorf("defaults not applied: %+v", d)
	}
}

func TestPlanRefusals(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want error
		code string
		text string // part of the explanation
	}{
		{"no hosts", Request{}, ErrTooFewHosts, "no-hosts", "--host A="},
		{"one host", Request{Hosts: hosts(1)}, ErrTooFewHosts, "too-few-hosts", "at least two hosts"},
		{"two hosts one group", Request{Hosts: hosts(2), Groups: 1}, ErrNoSurvivingGroup, "no-surviving-group", "--groups 2"},
		{"one store per group", Request{Hosts: hosts(2), StoresPerGroup: 1}, ErrTooFewStores, "too-few-stores", "sequence\nnumber 0"},
		{"two stores per group", Request{Hosts: hosts(3), StoresPerGroup: 2}, ErrTooFewStores, "too-few-stores", "Why not\ntwo stores?"},
		{"even group size", Request{Hosts: hosts(3), StoresPerGroup: 4}, ErrEvenGroupSize, "even-group-size", "3 or 5"},
		{"too many stores", Request{Hosts: hosts(3), StoresPerGroup: 11}, ErrInvalidRequest, "too-many-stores", "3 or 5"},
		{"too many groups", Request{Hosts: hosts(3), Groups: 100}, ErrInvalidRequest, "too-many-groups", "two groups"},
		{"negative groups", Request{Hosts: hosts(2), Groups: -1}, ErrInvalidRequest, "invalid-groups", ""},
		{"ports beyond 65535", Request{Hosts: hosts(2), BasePort: 64600}, ErrPortRange, "port-range", "at most 64512"},
		{"duplicate host", Request{Hosts: []Host{{"A", "10.0.0.1"}, {"A", "10.0.0.2"}}}, ErrInvalidRequest, "duplicate-host", ""},
		{"bad address", Request{Hosts: []Host{{"A", "10.0.0.1:80"}, {"B", "10.0.0.2"}}}, ErrInvalidRequest, "invalid-address", "NAME=ADDRESS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, a, err := Plan(tt.req)
			if err == nil {
				t.Fatalf("accepted:\n%s", RenderLayout(d))
			}
			if d != nil || a != nil {
				t.Error("a refusal returns no deployment and no analysis")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.want)
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("not a *Refusal: %T", err)
			}
			if r.Code != tt.code {
				t.Errorf("code %q, want %q", r.Code, tt.code)
			}
			if r.Reason == "" || r.Explanation == "" {
				t.Errorf("reason %q explanation %q: both must be set", r.Reason, r.Explanation)
			}
			if !strings.Contains(r.Explanation, tt.text) {
				t.Errorf("explanation does not mention %q:\n%s", tt.text, r.Explanation)
			}
		})
	}
}

func TestPlanPortsFitExactly(t *testing.T) {
	// 2 groups of 3: the highest client port is base+1023.
	if _, _, err := Plan(Request{Hosts: hosts(2), BasePort: 65535 - 1023}); err != nil {
		t.Errorf("highest base port refused: %v", err)
	}
	if _, _, err := Plan(Request{Hosts: hosts(2), BasePort: 65535 - 1022}); !errors.Is(err, ErrPortRange) {
		t.Errorf("want ErrPortRange, got %v", err)
	}
}

func TestPlanReproducesSpecExample(t *testing.T) {
	d, _, err := Plan(Request{Name: "demo", Hosts: []Host{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "valid", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The planner also records where each group prefers to be led from:
	// the host holding its majority (A for group 1, B for group 2).
	planned := strings.Replace(string(want), "  - index: 1\n", "  - index: 1\n    preferred-host: A\n", 1)
	planned = strings.Replace(planned, "  - index: 2\n", "  - index: 2\n    preferred-host: B\n", 1)
	if string(got) != planned {
		t.Errorf("plan for the SPEC example differs:\n--- got\n%s--- want\n%s", got, planned)
	}
}
