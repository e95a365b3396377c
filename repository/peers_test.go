package repository

import (
	"reflect"
	"testing"
)

func TestApplyPeerGroup(t *testing.T) {
	own := InitGroup{GroupID: "g-1", Index: 1, UnixNano: 1}
	runPeerGroupCases(t, []peerGroupCase{
		{
			name: "record new",
			cmds: []any{own, PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 10}},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2", Changed: true}},
			},
			peers:   map[int]string{2: "g-2"},
			records: []PeerGroupRecord{{Index: 2, GroupID: "g-2", SinceUnixNano: 10}},
		},
		{
			name: "same again changes nothing, not even the time",
			cmds: []any{own, PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 10}, PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 20}},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2"}},
			},
			peers:   map[int]string{2: "g-2"},
			records: []PeerGroupRecord{{Index: 2, GroupID: "g-2", SinceUnixNano: 10}},
		},
		{
			name: "different id replaces and keeps the previous one",
			cmds: []any{
				own,
				PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 10},
				PeerGroup{Index: 2, GroupID: "g-2b", UnixNano: 20},
				PeerGroup{Index: 2, GroupID: "g-2b", UnixNano: 30},
			},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2b", Previous: "g-2", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2b", Previous: "g-2"}},
			},
			peers:   map[int]string{2: "g-2b"},
			records: []PeerGroupRecord{{Index: 2, GroupID: "g-2b", SinceUnixNano: 20, Previous: "g-2"}},
		},
		{
			name: "only the last replaced id is kept",
			cmds: []any{
				own,
				PeerGroup{Index: 3, GroupID: "a", UnixNano: 1},
				PeerGroup{Index: 3, GroupID: "b", UnixNano: 2},
				PeerGroup{Index: 3, GroupID: "a", UnixNano: 3},
			},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{PeerGroup: &PeerGroupResult{Index: 3, GroupID: "a", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 3, GroupID: "b", Previous: "a", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 3, GroupID: "a", Previous: "b", Changed: true}},
			},
			peers:   map[int]string{3: "a"},
			records: []PeerGroupRecord{{Index: 3, GroupID: "a", SinceUnixNano: 3, Previous: "b"}},
		},
		{
			name: "several groups, listed by index",
			cmds: []any{
				own,
				PeerGroup{Index: 300, GroupID: "g-300", UnixNano: 5},
				PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 6},
				PeerGroup{Index: 4, GroupID: "g-4", UnixNano: 7},
			},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{PeerGroup: &PeerGroupResult{Index: 300, GroupID: "g-300", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 2, GroupID: "g-2", Changed: true}},
				{PeerGroup: &PeerGroupResult{Index: 4, GroupID: "g-4", Changed: true}},
			},
			peers: map[int]string{2: "g-2", 4: "g-4", 300: "g-300"},
			records: []PeerGroupRecord{
				{Index: 2, GroupID: "g-2", SinceUnixNano: 6},
				{Index: 4, GroupID: "g-4", SinceUnixNano: 7},
				{Index: 300, GroupID: "g-300", SinceUnixNano: 5},
			},
		},
	})
}

// peerGroupCase is one case of TestApplyPeerGroup and its siblings.
type peerGroupCase struct {
	name    string
	cmds    []any
	wants   []want
	peers   map[int]string
	records []PeerGroupRecord // PeerGroupRecords afterwards
}

// What a PeerGroup refuses, and which index is another group's before\nInitGroup.
func TestApplyPeerGroupRefused(t *testing.T) {
	own := InitGroup{GroupID: "g-1", Index: 1, UnixNano: 1}
	runPeerGroupCases(t, []peerGroupCase{
		{
			name: "bad index, empty id and own index are refused",
			cmds: []any{
				own,
				PeerGroup{Index: 0, GroupID: "g-0"},
				PeerGroup{Index: -2, GroupID: "g-x"},
				PeerGroup{Index: 2, GroupID: ""},
				PeerGroup{Index: 1, GroupID: "g-1"},
				PeerGroup{Index: 1, GroupID: "other"},
			},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
			},
			peers: map[int]string{},
		},
		{
			name: "before InitGroup any index is another group's",
			cmds: []any{PeerGroup{Index: 1, GroupID: "g-1", UnixNano: 4}},
			wants: []want{
				{PeerGroup: &PeerGroupResult{Index: 1, GroupID: "g-1", Changed: true}},
			},
			peers:   map[int]string{1: "g-1"},
			records: []PeerGroupRecord{{Index: 1, GroupID: "g-1", SinceUnixNano: 4}},
		},
	})
}

// runPeerGroupCases applies each case to a fresh repository and checks its
// results and the peer groups recorded.
func runPeerGroupCases(t *testing.T, tests []peerGroupCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := applyChecked(t, tt.cmds, tt.wants)
			peers, err := r.PeerGroups()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(peers, tt.peers) {
				t.Errorf("PeerGroups = %v, want %v", peers, tt.peers)
			}
			records, err := r.PeerGroupRecords()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(records, tt.records) {
				t.Errorf("PeerGroupRecords =\n  %+v\nwant\n  %+v", records, tt.records)
			}
		})
	}
}

func TestPeerGroupRefusalsSayWhy(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1, InitGroup{GroupID: "g-1", Index: 1}, PeerGroup{Index: 1, GroupID: "g-1"}))
	checkRefusalsSay(t, res, map[int]string{1: "own group"})
}

func TestPeerGroupsEmpty(t *testing.T) {
	r := openTest(t)
	// A repository with state but no peer record: no bucket at all.
	mustApply(t, r, logOf(1, InitGroup{GroupID: "g", Index: 1}, pub("a", 1, 1)))
	peers, err := r.PeerGroups()
	if err != nil || peers == nil || len(peers) != 0 {
		t.Errorf("PeerGroups = %v, %v; want an empty map", peers, err)
	}
	if records, err := r.PeerGroupRecords(); err != nil || records != nil {
		t.Errorf("PeerGroupRecords = %v, %v; want none", records, err)
	}
	r.Close()
	if _, err := r.PeerGroups(); err == nil {
		t.Error("PeerGroups after Close succeeded")
	}
}

func TestPeerGroupsLeaveHasStateAlone(t *testing.T) {
	r := openTest(t)
	if r.HasState() {
		t.Fatal("fresh repository claims state")
	}
	mustApply(t, r, logOf(1, PeerGroup{Index: 2, GroupID: "g-2"}))
	if r.GroupID() != "" || r.GroupIndex() != 0 {
		t.Errorf("a peer record set the group identity: %q/%d", r.GroupID(), r.GroupIndex())
	}
}

func TestPeerGroupsSurviveReopen(t *testing.T) {
	r := reopen(t, openApplied(t,
		InitGroup{GroupID: "g-1", Index: 1},
		PeerGroup{Index: 2, GroupID: "old", UnixNano: 1},
		PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 2},
		PeerGroup{Index: 3, GroupID: "g-3", UnixNano: 3},
	))
	peers, err := r.PeerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(peers, map[int]string{2: "g-2", 3: "g-3"}) {
		t.Errorf("after reopen PeerGroups = %v", peers)
	}
	records, _ := r.PeerGroupRecords()
	if len(records) != 2 || records[0].Previous != "old" {
		t.Errorf("after reopen PeerGroupRecords = %+v", records)
	}
	// Replaying the entries after a restart changes nothing.
	checkAllSkipped(t, mustApply(t, r, logOf(3, PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 2}, PeerGroup{Index: 3, GroupID: "g-3", UnixNano: 3})))
}

func TestDigestCoversPeerGroups(t *testing.T) {
	base := []any{InitGroup{GroupID: "g", Index: 1}, pub("a", 1, 2)}
	checkDigestVariants(t, base, "peer records", map[string][]any{
		"no record":          nil,
		"record":             {PeerGroup{Index: 2, GroupID: "h", UnixNano: 1}},
		"other id":           {PeerGroup{Index: 2, GroupID: "i", UnixNano: 1}},
		"other index":        {PeerGroup{Index: 3, GroupID: "h", UnixNano: 1}},
		"other time":         {PeerGroup{Index: 2, GroupID: "h", UnixNano: 2}},
		"previous id":        {PeerGroup{Index: 2, GroupID: "x", UnixNano: 0}, PeerGroup{Index: 2, GroupID: "h", UnixNano: 1}},
		"other previous id":  {PeerGroup{Index: 2, GroupID: "y", UnixNano: 0}, PeerGroup{Index: 2, GroupID: "h", UnixNano: 1}},
		"two records":        {PeerGroup{Index: 2, GroupID: "h", UnixNano: 1}, PeerGroup{Index: 3, GroupID: "h", UnixNano: 1}},
		"refused own record": {PeerGroup{Index: 1, GroupID: "g", UnixNano: 1}},
	}, func(name string) bool {
		return name == "no record" || name == "refused own record"
	})

	// Canonical: the order in which records were made does not matter, nor
	// does repeating one.
	a := digestAfter(t, base, PeerGroup{Index: 3, GroupID: "c", UnixNano: 1}, PeerGroup{Index: 2, GroupID: "b", UnixNano: 1})
	b := digestAfter(t, base, PeerGroup{Index: 2, GroupID: "b", UnixNano: 1}, PeerGroup{Index: 3, GroupID: "c", UnixNano: 1}, PeerGroup{Index: 2, GroupID: "b", UnixNano: 9})
	if a != b {
		t.Error("digest depends on the order of peer records")
	}
}

func TestSnapshotCarriesPeerGroups(t *testing.T) {
	src := openApplied(t,
		InitGroup{GroupID: "g-1", Index: 1},
		PeerGroup{Index: 2, GroupID: "old", UnixNano: 1},
		PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 2},
		PeerGroup{Index: 3, GroupID: "g-3", UnixNano: 3},
	)
	wantRecords, err := src.PeerGroupRecords()
	if err != nil {
		t.Fatal(err)
	}

	// Into an empty store, and over a member of the same group that has
	// other records: both end with exactly the snapshot's.
	for name, r := range restoredCopies(t, src, InitGroup{GroupID: "g-1", Index: 1}, PeerGroup{Index: 5, GroupID: "g-5"}) {
		records, err := r.PeerGroupRecords()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(records, wantRecords) {
			t.Errorf("%s: restored PeerGroupRecords = %+v, want %+v", name, records, wantRecords)
		}
		// The restored records take part in later entries.
		res := mustApply(t, r, logOf(5, PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 9}))
		if res[0].PeerGroup == nil || res[0].PeerGroup.Changed || res[0].PeerGroup.Previous != "old" {
			t.Errorf("%s: PeerGroup after restore = %+v", name, res[0].PeerGroup)
		}
	}
}
