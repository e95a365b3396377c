package placement

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// stepLine summarises a step as "N:STORE<-WAITSFOR/UNTIL" for comparison.
func stepLines(r *Restart) []string {
	var out []string
	for _, s := range r.Steps {
		line := fmt.Sprintf("%d:%s", s.Number, s.Store)
		if s.WaitsFor != "" {
			line += "<-" + s.WaitsFor + "/" + s.WaitsUntil
		}
		out = append(out, line)
	}
	return out
}

func TestRestartPlan(t *testing.T) {
	dev := Dev("127.0.0.1", 14000)
	five, _, err := Plan(Request{Hosts: hosts(2), Groups: 2, StoresPerGroup: 5})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		d        *Deployment
		host     string
		hasState map[string]bool
		want     []string
		notes    []string // substrings of Render
	}{
		{
			name: "host A back without state",
			d:    dev, host: "A", hasState: nil,
			want:  []string{"1:G1S1", "1:G2S1", "2:G1S2<-G1S1/caught-up"},
			notes: []string{"G1S2 waits until G1S1 has caught up", "catches up from G1S3 on host B", "0 with state, 3 empty"},
		},
		{
			name: "host A back with all state",
			d:    dev, host: "A", hasState: map[string]bool{"G1S1": true, "G1S2": true, "G2S1": true},
			want:  []string{"1:G1S1", "1:G1S2", "1:G2S1"},
			notes: []string{"all start at once"},
		},
		{
			name: "host B back without state",
			d:    dev, host: "B", hasState: map[string]bool{},
			want:  []string{"1:G1S3", "1:G2S2", "2:G2S3<-G2S2/caught-up"},
			notes: []string{"G2S3 waits until G2S2 has caught up"},
		},
		{
			name: "one store lost its state",
			d:    dev, host: "A", hasState: map[string]bool{"G1S1": true, "G2S1": true},
			want: []string{"1:G1S1", "1:G2S1", "2:G1S2"},
		},
		{
			name: "only state of the group is on this host",
			d:    dev, host: "A", hasState: map[string]bool{"G1S1": true, "G1S3": false},
			want:  []string{"1:G1S1", "2:G1S2<-G1S1/running", "2:G2S1"},
			notes: []string{"G1S2 waits until G1S1 is running"},
		},
		{
			name: "five stores per group: one empty store per group at a time",
			d:    five, host: "A", hasState: nil,
			want: []string{"1:G1S1", "1:G2S1", "2:G1S2<-G1S1/caught-up", "2:G2S2<-G2S1/caught-up", "3:G1S3<-G1S2/caught-up"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := RestartPlan(tt.d, tt.host, tt.hasState)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(stepLines(r), " "); got != strings.Join(tt.want, " ") {
				t.Errorf("steps\n got %s\nwant %s", got, strings.Join(tt.want, " "))
			}
			text := r.Render()
			for _, n := range tt.notes {
				if !strings.Contains(text, n) {
					t.Errorf("render lacks %q:\n%s", n, text)
				}
			}
			checkRestartRules(t, tt.d, tt.host, tt.hasState, r)
		})
	}
}

// checkNoEmptyQuorum replays the plan phase by phase and checks that no
// group ever has a quorum of running stores that are still empty... more
// precisely, that at most one empty store per group is catching up at once
// and that it has a member with state to catch up from.
func checkNoEmptyQuorum(t *testing.T, d *Deployment, host string, hasState map[string]bool, r *Restart) {
	t.Helper()
	for _, phase := range r.Phases() {
		perGroup := map[int]int{}
		for _, s := range phase {
			if s.HasState {
				continue
			}
			perGroup[s.Group]++
			if perGroup[s.Group] > 1 {
				t.Errorf("step %d starts more than one empty store of group %d", s.Number, s.Group)
			}
			if len(s.CatchesUpFrom) == 0 {
				t.Errorf("%s has no member with state to catch up from", s.Store)
			}
		}
	}
}

func TestRestartPlanNoStoreWithState(t *testing.T) {
	d := Dev("127.0.0.1", 14000)
	_, err := RestartPlan(d, "A", map[string]bool{"G1S3": false, "G2S1": true})
	if !errors.Is(err, ErrNoStoreWithState) {
		t.Fatalf("want ErrNoStoreWithState, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"cannot recover group 1: no store with state", "umstored recover"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "group 2") {
		t.Errorf("group 2 has state and must not be reported: %s", msg)
	}

	// Both groups lost: both reported.
	_, err = RestartPlan(d, "B", map[string]bool{"G1S1": false, "G1S2": false, "G2S1": false})
	for _, want := range []string{"cannot recover group 1: no store with state", "cannot recover group 2: no store with state"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestRestartPlanBadInput(t *testing.T) {
	d := Dev("127.0.0.1", 14000)
	if _, err := RestartPlan(d, "C", nil); err == nil || !strings.Contains(err.Error(), `unknown host "C"`) {
		t.Errorf("unknown host: %v", err)
	}
	if _, err := RestartPlan(d, "A", map[string]bool{"G9S9": true}); err == nil || !strings.Contains(err.Error(), `unknown store "G9S9"`) {
		t.Errorf("unknown store: %v", err)
	}
}

func TestRestartPlanHostWithoutStores(t *testing.T) {
	d := Dev("127.0.0.1", 14000)
	d.Hosts = append(d.Hosts, Host{Name: "C", Address: "127.0.0.9"})
	r, err := RestartPlan(d, "C", nil)
	if err != nil || len(r.Steps) != 0 || !strings.Contains(r.Render(), "runs no stores") {
		t.Errorf("got %+v, %v", r, err)
	}
}
