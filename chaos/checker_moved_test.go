package main

import (
	"strings"
	"testing"
	"time"
)

// testLayout is the 2+1 / 1+2 layout with the client ports the planner
// would give base 10000.
var testLayout = []StoreLayout{
	{Name: "G1S1", Group: 1, Host: "A", ClientPort: 11011},
	{Name: "G1S2", Group: 1, Host: "A", ClientPort: 11012},
	{Name: "G1S3", Group: 1, Host: "B", ClientPort: 11013},
	{Name: "G2S1", Group: 2, Host: "A", ClientPort: 11021},
	{Name: "G2S2", Group: 2, Host: "B", ClientPort: 11022},
	{Name: "G2S3", Group: 2, Host: "B", ClientPort: 11023},
}

// replaced builds healthy(10) in which host A was replaced, 127.0.0.2 ->
// 127.0.0.5, an hour ago, and then every store was sampled: host A's
// stores (started with the edited file) list no member as moved, host B's
// (still on the planned file) list host A's members of their group at
// their new addresses, recorded. Every check passes on it. It returns the
// time of the samples.
func replaced(t *testing.T) (*History, time.Time) {
	t.Helper()
	h := healthy(10)
	t0 := time.Now().Add(-time.Hour)
	planned := map[string]string{"A": "127.0.0.2", "B": "127.0.0.3"}
	edited := map[string]string{"A": "127.0.0.5", "B": "127.0.0.3"}
	h.SetLayout(testLayout)
	h.HostStarted(HostRun{Host: "A", Incarnation: 1, Addr: "127.0.0.2", File: "deployment.yaml", FileAddrs: planned, At: t0})
	h.HostStarted(HostRun{Host: "B", Incarnation: 1, Addr: "127.0.0.3", File: "deployment.yaml", FileAddrs: planned, At: t0})
	f := FaultRecord{Kind: ReplaceHost, Target: "A", Start: t0.Add(time.Minute), End: t0.Add(time.Minute + 3*time.Second), Restored: t0.Add(2 * time.Minute)}
	h.Fault(f)
	h.HostStarted(HostRun{Host: "A", Incarnation: 2, Addr: "127.0.0.5", File: "deployment-1-A.yaml", FileAddrs: edited, At: f.End})
	at := t0.Add(5 * time.Minute)
	for _, s := range testLayout {
		st := storeStatus{Name: s.Name, Group: s.Group, State: "Follower"}
		if s.Host == "B" {
			for _, m := range testLayout {
				if m.Host == "A" && m.Group == s.Group {
					st.Moved = append(st.Moved, movedStatus{Name: m.Name, ClientAddr: clientAddr("127.0.0.5", m.ClientPort), Recorded: true})
				}
			}
		}
		observeAt(h, s.Host, st, at)
	}
	return h, at
}

// observeAt records a status sample of a store taken at a given time.
func observeAt(h *History, host string, st storeStatus, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeStoreAt(host, st, at)
}

// withBook replaces what store's latest sample showed of its moves.
func withBook(h *History, store string, at time.Time, moved []movedStatus, refused string) {
	b := h.Books[store]
	b.At, b.Moved, b.MoveRefused = at, moved, refused
}

func TestCheckAcrossAReplacedHost(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History, at time.Time)
		rule   string // "" = no violation
		want   string
	}{
		{name: "replaced host, every view right", mutate: func(*History, time.Time) {}},
		{
			name: "the replaced host's stores came back empty, then with their group's identity",
			mutate: func(h *History, _ time.Time) {
				for _, s := range []struct {
					name  string
					group int
					id    string
				}{{"G1S1", 1, "id-one"}, {"G1S2", 1, "id-one"}, {"G2S1", 2, "id-two"}} {
					h.ObserveGroupID("A", s.name, s.group, "")
					h.ObserveGroupID("A", s.name, s.group, s.id)
				}
			},
		},
		{
			name: "a replaced host's store with a changed group identity",
			mutate: func(h *History, _ time.Time) {
				h.ObserveGroupID("A", "G1S1", 1, "")
				h.ObserveGroupID("A", "G1S1", 1, "id-new")
			},
			rule: "rule3", want: "store G1S1 (host A at 127.0.0.5 (replaced; first at 127.0.0.2)) changed its group identity from id-one to id-new",
		},
		{
			name: "two empty stores of a group catching up on the replaced host",
			mutate: func(h *History, _ time.Time) {
				h.ObserveCatchUp(CatchUpObs{Host: "A", Group: 1, Stores: []string{"G1S1", "G1S2"}, Via: "status", At: time.Now()})
			},
			rule: "rule4", want: "host A at 127.0.0.5 (replaced; first at 127.0.0.2): 2 empty stores of group 1",
		},
		{
			name: "the surviving host's store still reaches a moved member where its file says",
			mutate: func(h *History, at time.Time) {
				withBook(h, "G1S3", at, []movedStatus{{Name: "G1S2", ClientAddr: "127.0.0.5:11012", Recorded: true}}, "")
			},
			rule: "moved", want: "store G1S3 (host B) reaches G1S1 at 127.0.0.2:11011 (its host's file deployment.yaml), but it listens at 127.0.0.5:11011",
		},
		{
			name: "a move accepted but not recorded in the group's log",
			mutate: func(h *History, at time.Time) {
				withBook(h, "G2S2", at, []movedStatus{{Name: "G2S1", ClientAddr: "127.0.0.5:11021"}}, "")
			},
			rule: "moved", want: "G2S1 at 127.0.0.5:11021, which the group's log does not record",
		},
		{
			name: "a store reaches a member where it was before its last replacement",
			mutate: func(h *History, at time.Time) {
				withBook(h, "G2S3", at, []movedStatus{{Name: "G2S1", ClientAddr: "127.0.0.6:11021", Recorded: true}}, "")
			},
			rule: "moved", want: "G2S1 at 127.0.0.6:11021 (moved), but it listens at 127.0.0.5:11021",
		},
		{
			name: "a member refuses a store's address",
			mutate: func(h *History, at time.Time) {
				withBook(h, "G1S1", at, nil, "G1S3: G1S1 still answers at 127.0.0.2:11011")
			},
			rule: "moved", want: "store G1S1 (host A at 127.0.0.5 (replaced; first at 127.0.0.2)): members of its group refuse its address",
		},
		{
			name: "a store last sampled before the replacement was restored is not judged",
			mutate: func(h *History, _ time.Time) {
				withBook(h, "G1S3", h.Faults[len(h.Faults)-1].Restored.Add(-time.Second), nil, "")
			},
		},
		{
			name: "a replacement never restored is liveness's to report",
			mutate: func(h *History, at time.Time) {
				h.Faults[len(h.Faults)-1].Restored = time.Time{}
				withBook(h, "G1S3", at, nil, "")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, at := replaced(t)
			tc.mutate(h, at)
			res := Check(h)
			if tc.rule == "" {
				if len(res.Violations) != 0 {
					t.Fatalf("want no violation, got %v", res.Violations)
				}
				return
			}
			for _, v := range res.Violations {
				if v.Rule == tc.rule && strings.Contains(v.Detail, tc.want) {
					return
				}
			}
			t.Fatalf("want a %s violation containing %q, got %v", tc.rule, tc.want, res.Violations)
		})
	}
}

// Host A replaced twice (127.0.0.2 -> .5 -> .6), then host B (.3 -> .5,
// the address A left): every store must reach every member at its last
// address, whichever file its host runs with.
func TestCheckMovedAfterSeveralReplacements(t *testing.T) {
	h := healthy(10)
	t0 := time.Now().Add(-time.Hour)
	files := []map[string]string{
		{"A": "127.0.0.2", "B": "127.0.0.3"},
		{"A": "127.0.0.5", "B": "127.0.0.3"},
		{"A": "127.0.0.6", "B": "127.0.0.3"},
		{"A": "127.0.0.6", "B": "127.0.0.5"},
	}
	h.SetLayout(testLayout)
	h.HostStarted(HostRun{Host: "A", Incarnation: 1, Addr: "127.0.0.2", File: "f0", FileAddrs: files[0], At: t0})
	h.HostStarted(HostRun{Host: "B", Incarnation: 1, Addr: "127.0.0.3", File: "f0", FileAddrs: files[0], At: t0})
	for i, mv := range []struct{ host, addr string }{{"A", "127.0.0.5"}, {"A", "127.0.0.6"}, {"B", "127.0.0.5"}} {
		start := t0.Add(time.Duration(i+1) * time.Minute)
		h.Fault(FaultRecord{Kind: ReplaceHost, Target: mv.host, Start: start, End: start.Add(2 * time.Second), Restored: start.Add(30 * time.Second)})
		h.HostStarted(HostRun{Host: mv.host, Incarnation: i + 2, Addr: mv.addr, File: "f" + string(rune('1'+i)), FileAddrs: files[i+1], At: start.Add(2 * time.Second)})
	}
	at := t0.Add(10 * time.Minute)
	// Host A runs with files[2] (B at .3, now at .5); host B with files[3].
	sample := func(moved map[string][]movedStatus) {
		for _, s := range testLayout {
			observeAt(h, s.Host, storeStatus{Name: s.Name, Group: s.Group, State: "Follower", Moved: moved[s.Name]}, at)
		}
	}
	right := map[string][]movedStatus{
		"G1S1": {{Name: "G1S3", ClientAddr: "127.0.0.5:11013", Recorded: true}},
		"G1S2": {{Name: "G1S3", ClientAddr: "127.0.0.5:11013", Recorded: true}},
		"G2S1": {{Name: "G2S2", ClientAddr: "127.0.0.5:11022", Recorded: true}, {Name: "G2S3", ClientAddr: "127.0.0.5:11023", Recorded: true}},
	}
	sample(right)
	if res := Check(h); len(res.Violations) != 0 {
		t.Fatalf("want no violation, got %v", res.Violations)
	}
	// G2S1 never learnt that B moved: its file still says 127.0.0.3.
	stale := map[string][]movedStatus{"G1S1": right["G1S1"], "G1S2": right["G1S2"]}
	sample(stale)
	res := Check(h)
	found := false
	for _, v := range res.Violations {
		found = found || v.Rule == "moved" && strings.Contains(v.Detail, "store G2S1 (host A at 127.0.0.6 (replaced; first at 127.0.0.2)) reaches G2S2 at 127.0.0.3:11022 (its host's file f2), but it listens at 127.0.0.5:11022 (host B at 127.0.0.5 (replaced; first at 127.0.0.3))")
	}
	if !found {
		t.Fatalf("want a moved violation for G2S1's stale view of group 2, got %v", res.Violations)
	}
}
