package repository

import (
	"errors"
	"reflect"
	"testing"
)

// want describes the expected Result of one entry. Zero fields of Err mean
// "no error"; the command results are compared by value.
type want struct {
	Skipped, Ignored bool
	Err              error
	Register         *RegisterResult
	Publish          *PublishResult
	InitGroup        *InitGroupResult
	PeerGroup        *PeerGroupResult
	Consumed         *ConsumedResult
	Trim             *TrimResult
	Expire           *ExpireResult
	Receiver         *ReceiverResult
}

func checkResults(t *testing.T, got []Result, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d results, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		switch {
		case w.Err == nil && g.Err != nil:
			t.Errorf("entry %d: unexpected Err %v", g.Index, g.Err)
		case w.Err != nil && !errors.Is(g.Err, w.Err):
			t.Errorf("entry %d: Err = %v, want %v", g.Index, g.Err, w.Err)
		}
		if g.Skipped != w.Skipped || g.Ignored != w.Ignored {
			t.Errorf("entry %d: Skipped/Ignored = %v/%v, want %v/%v", g.Index, g.Skipped, g.Ignored, w.Skipped, w.Ignored)
		}
		for _, f := range []struct {
			name      string
			got, want any
		}{
			{"Register", g.Register, w.Register},
			{"Publish", g.Publish, w.Publish},
			{"InitGroup", g.InitGroup, w.InitGroup},
			{"PeerGroup", g.PeerGroup, w.PeerGroup},
			{"Consumed", g.Consumed, w.Consumed},
			{"Trim", g.Trim, w.Trim},
			{"Expire", g.Expire, w.Expire},
			{"Receiver", g.Receiver, w.Receiver},
		} {
			if !reflect.DeepEqual(f.got, f.want) {
				t.Errorf("entry %d: %s = %+v, want %+v", g.Index, f.name, f.got, f.want)
			}
		}
	}
}

func pub(src string, first uint64, n int) Publish {
	return Publish{Source: src, FirstSeq: first, Payloads: payloads(src, first, n)}
}

func TestApply(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "publish in order creates the source",
			cmds: []any{pub("a", 1, 3), pub("a", 4, 2)},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 4, LastSeq: 5, Stored: 2, HighSeq: 5}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 5, LowSeq: 1, Count: 5}},
		},
		{
			name: "duplicates are no-ops",
			cmds: []any{pub("a", 1, 3), pub("a", 2, 4), pub("a", 1, 1)},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 2, LastSeq: 5, Stored: 2, Duplicates: 2, HighSeq: 5}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 1, Duplicates: 1, HighSeq: 5}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 5, LowSeq: 1, Count: 5}},
		},
		{
			name: "a different payload for a held sequence is counted, never stored",
			cmds: []any{pub("a", 1, 3), Publish{Source: "a", FirstSeq: 2, Payloads: [][]byte{[]byte("not the same"), nil}}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 2, LastSeq: 3, Duplicates: 2, HighSeq: 3, Conflicts: 2, FirstConflict: 2}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 3, LowSeq: 1, Count: 3}},
		},
		{
			name: "new source starting above 1 records a gap from 1",
			cmds: []any{pub("a", 5, 2)},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 5, LastSeq: 6, Stored: 2, HighSeq: 6, NewGap: &Range{1, 4}}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 6, LowSeq: 5, Count: 2, Gaps: []Range{{1, 4}}}},
		},
		{
			name: "gap filled piece by piece: split, shrink, remove",
			cmds: []any{
				pub("a", 1, 1),  // 1
				pub("a", 10, 1), // gap [2,9]
				pub("a", 5, 1),  // [2,4] [6,9]
				pub("a", 2, 1),  // [3,4] [6,9]
				pub("a", 9, 1),  // [3,4] [6,8]
				pub("a", 3, 2),  // [6,8]
				pub("a", 6, 6),  // 6,7,8 stored; 9,10 duplicates; 11 new
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 1, Stored: 1, HighSeq: 1}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 10, LastSeq: 10, Stored: 1, HighSeq: 10, NewGap: &Range{2, 9}}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 5, LastSeq: 5, Stored: 1, HighSeq: 10}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 2, LastSeq: 2, Stored: 1, HighSeq: 10}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 9, LastSeq: 9, Stored: 1, HighSeq: 10}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 3, LastSeq: 4, Stored: 2, HighSeq: 10}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 6, LastSeq: 11, Stored: 4, Duplicates: 2, HighSeq: 11}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 11, LowSeq: 1, Count: 11}},
		},
		{
			name: "gap fill below the lowest message lowers LowSeq",
			cmds: []any{pub("a", 4, 1), pub("a", 2, 1)},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 4, LastSeq: 4, Stored: 1, HighSeq: 4, NewGap: &Range{1, 3}}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 2, LastSeq: 2, Stored: 1, HighSeq: 4}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 4, LowSeq: 2, Count: 2, Gaps: []Range{{1, 1}, {3, 3}}}},
		},
	})
}

// applyCase is one case of TestApply and its siblings.
type applyCase struct {
	name    string
	cmds    []any
	wants   []want
	sources []SourceInfo // expected Sources() afterwards (Bytes ignored)
	group   string
}

// Registrations, and sources listed by name.
func TestApplyRegisterAndList(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "register new then existing source",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 100},
				pub("a", 1, 2),
				Register{Source: "a", Session: "s2", UnixNano: 200},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Register: &RegisterResult{Source: "a", HighSeq: 2, LowSeq: 1}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 2, LowSeq: 1, Count: 2, Session: "s2", CreatedUnixNano: 100, LastRegisterUnixNano: 200}},
		},
		{
			name: "sources listed by name",
			cmds: []any{Register{Source: "b", UnixNano: 1}, pub("c", 1, 1), Register{Source: "a", UnixNano: 2}},
			wants: []want{
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Publish: &PublishResult{Source: "c", FirstSeq: 1, LastSeq: 1, Stored: 1, HighSeq: 1}},
				{Register: &RegisterResult{Source: "a", Created: true}},
			},
			sources: []SourceInfo{
				{Name: "a", CreatedUnixNano: 2, LastRegisterUnixNano: 2},
				{Name: "b", CreatedUnixNano: 1, LastRegisterUnixNano: 1},
				{Name: "c", HighSeq: 1, LowSeq: 1, Count: 1},
			},
		},
	})
}

// The group identity, and entries that are not plain commands: none, a
// malformed or invalid one, unknown and ignorable, known with the flag.
func TestApplyIdentityAndOddEntries(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "init group: same id again, then a different id",
			cmds: []any{
				InitGroup{GroupID: "g-1", Index: 1, UnixNano: 5},
				InitGroup{GroupID: "g-1", Index: 1, UnixNano: 6},
				InitGroup{GroupID: "g-2", Index: 1, UnixNano: 7},
				InitGroup{GroupID: "g-1", Index: 2, UnixNano: 8},
			},
			wants: []want{
				{InitGroup: &InitGroupResult{GroupID: "g-1"}},
				{InitGroup: &InitGroupResult{GroupID: "g-1", AlreadyInitialised: true}},
				{Err: ErrGroupMismatch},
				{Err: ErrGroupMismatch},
			},
			group: "g-1",
		},
		{
			name:  "non-command entries only advance the index",
			cmds:  []any{nil, rawData{}, nil},
			wants: []want{{}, {}, {}},
		},
		{
			name: "malformed and invalid commands are refused deterministically",
			cmds: []any{
				rawData{byte(CmdPublish), 0x93, 0xff},
				rawData{byte(CmdRegister)},
				Publish{Source: "a", FirstSeq: 0, Payloads: [][]byte{{1}}},
				Publish{Source: "", FirstSeq: 1, Payloads: [][]byte{{1}}},
				Publish{Source: "a", FirstSeq: 1},
				Publish{Source: "a", FirstSeq: ^uint64(0), Payloads: [][]byte{{1}, {2}}},
				Register{Source: string(make([]byte, MaxSourceNameLen+1))},
				InitGroup{GroupID: ""},
				PeerGroup{Index: 0, GroupID: "g"},
				PeerGroup{Index: 2},
				rawData{byte(CmdPeerGroup), 0x93, 0x02, 0xa1, 'g'},
				Consumed{Source: "", Receiver: "r", Seq: 1},
				Consumed{Source: "a", Receiver: "", Seq: 1},
				Consumed{Source: "a", Receiver: "r", Seq: 0},
				rawData{byte(CmdConsumed), 0x94, 0xa1, 'a', 0xa1, 'r', 0x01},
				Trim{Source: "", Through: 1},
				Trim{Source: "a", Through: 0},
				rawData{byte(CmdTrim), 0x93, 0xa1, 'a', 0x01, 0xa0},
				ExpireSession{Source: "", Session: "s"},
				ExpireSession{Source: "a", Session: ""},
				rawData{byte(CmdExpireSession), 0x92, 0xa1, 'a', 0xa1, 's'},
			},
			wants: []want{
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
			},
		},
		{
			name: "unknown command marked ignorable is skipped",
			cmds: []any{rawData{byte(IgnorableFlag | 0x7e), 0x01, 0x02}, pub("a", 1, 1)},
			wants: []want{
				{Ignored: true},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 1, Stored: 1, HighSeq: 1}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 1, LowSeq: 1, Count: 1}},
		},
		{
			name: "known command with the ignorable flag is applied",
			cmds: []any{rawData(append([]byte{byte(IgnorableFlag | CmdRegister)}, EncodeRegister(Register{Source: "a", UnixNano: 3})[1:]...))},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 3, LastRegisterUnixNano: 3}},
		},
	})
}

// runApplyCases applies each case to a fresh repository and checks its
// results, group identity and sources.
func runApplyCases(t *testing.T, tests []applyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := applyChecked(t, tt.cmds, tt.wants)
			if got := r.GroupID(); got != tt.group {
				t.Errorf("GroupID = %q, want %q", got, tt.group)
			}
			got, err := r.Sources()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i].Bytes = 0
			}
			if !reflect.DeepEqual(got, tt.sources) {
				t.Errorf("Sources =\n  %+v\nwant\n  %+v", got, tt.sources)
			}
		})
	}
}

func TestApplyCountsBytes(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1, Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{make([]byte, 10), make([]byte, 5), nil}}))
	// seq 3 is a duplicate and must not count twice; seq 4 is new.
	mustApply(t, r, logOf(2, Publish{Source: "a", FirstSeq: 3, Payloads: [][]byte{make([]byte, 5), make([]byte, 7)}}))
	info, ok, err := r.Source("a")
	if err != nil || !ok {
		t.Fatalf("Source: %v %v", ok, err)
	}
	if info.Bytes != 22 || info.Count != 4 {
		t.Errorf("Bytes/Count = %d/%d, want 22/4", info.Bytes, info.Count)
	}
}

func TestApplyGroupIdentity(t *testing.T) {
	r := openTest(t)
	if r.HasState() {
		t.Fatal("fresh repository claims state")
	}
	mustApply(t, r, logOf(1, InitGroup{GroupID: "g-7", Index: 2, UnixNano: 9}))
	if r.GroupID() != "g-7" || r.GroupIndex() != 2 || !r.HasState() {
		t.Errorf("group = %q/%d, HasState %v", r.GroupID(), r.GroupIndex(), r.HasState())
	}
}

func TestApplyUnknownCommandStopsBatch(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1, pub("a", 1, 1)))
	before := mustDigest(t, r)

	batch := logOf(2, pub("a", 2, 1), rawData{0x7f, 0x90}, pub("a", 3, 1))
	res, err := r.Apply(batch)
	if !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("Apply error = %v, want ErrUnknownCommand", err)
	}
	if res != nil {
		t.Errorf("results returned with a failed batch: %+v", res)
	}
	if got := r.AppliedIndex(); got != 1 {
		t.Errorf("AppliedIndex = %d after failed batch, want 1", got)
	}
	if got := mustDigest(t, r); got != before {
		t.Error("a failed batch changed the repository")
	}
	// An upgraded store would apply it; this one keeps refusing, never skips.
	if _, err := r.Apply(batch); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("second attempt: %v", err)
	}
}

func TestApplyIdempotent(t *testing.T) {
	r := openTest(t)
	batch := logOf(1,
		InitGroup{GroupID: "g", Index: 1},
		Register{Source: "a", Session: "s", UnixNano: 1},
		pub("a", 1, 4),
		pub("a", 8, 2),
		PeerGroup{Index: 2, GroupID: "h", UnixNano: 3},
		Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 4},
		Trim{Source: "a", Through: 2, Reason: "messages", UnixNano: 5},
		ExpireSession{Source: "a", Session: "s", UnixNano: 6},
		nil,
	)
	first := mustApply(t, r, batch)
	d1 := mustDigest(t, r)
	again := mustApply(t, r, batch)
	checkAllSkipped(t, again)
	for i, res := range again {
		if res.Index != first[i].Index {
			t.Errorf("replayed entry %d: Index %d, want %d", i, res.Index, first[i].Index)
		}
	}
	if d2 := mustDigest(t, r); d2 != d1 {
		t.Error("replaying a batch changed the digest")
	}
	if r.AppliedIndex() != 9 {
		t.Errorf("AppliedIndex = %d, want 9", r.AppliedIndex())
	}

	// Entries out of order inside a batch: the lower index is skipped.
	res := mustApply(t, r, []Entry{{Index: 11, Term: 2}, {Index: 10, Term: 2, Data: EncodePublish(pub("a", 5, 1))}})
	if res[0].Skipped || !res[1].Skipped {
		t.Errorf("out-of-order batch: %+v", res)
	}
	if r.AppliedIndex() != 11 || r.AppliedTerm() != 2 {
		t.Errorf("applied = %d/%d, want 11/2", r.AppliedIndex(), r.AppliedTerm())
	}
	if mustDigest(t, r) != d1 {
		t.Error("a skipped entry changed the repository")
	}
}

func TestApplyEmptyBatch(t *testing.T) {
	r := openTest(t)
	res, err := r.Apply(nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("Apply(nil) = %v, %v", res, err)
	}
}

func TestApplyAfterClose(t *testing.T) {
	r := openTest(t)
	r.Close()
	if _, err := r.Apply(logOf(1, pub("a", 1, 1))); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := r.Read("a", 1, 1, 0, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
}

// ApplyDecided hands over, before the commit, the very results Apply
// returns; it says nothing for a batch that applies nothing new or fails,
// since there is then nothing to answer early.
func TestApplyDecided(t *testing.T) {
	tests := []struct {
		name        string
		before      []any // applied first, from index 1
		batch       []Entry
		wantDecided bool
		wantErr     error
	}{
		{"new entries", []any{pub("a", 1, 1)}, logOf(2, pub("a", 2, 3), pub("b", 1, 1)), true, nil},
		{"a replay of held entries", []any{pub("a", 1, 1), pub("a", 2, 1)}, logOf(1, pub("a", 1, 1), pub("a", 2, 1)), false, nil},
		{"an unknown command", []any{pub("a", 1, 1)}, logOf(2, pub("a", 2, 1), rawData{0x7f, 0x90}), false, ErrUnknownCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openApplied(t, tt.before...)
			var decided []Result
			calls := 0
			res, err := r.ApplyDecided(tt.batch, func(results []Result) {
				calls++
				decided = results
				if got := r.AppliedIndex(); got != uint64(len(tt.before)) {
					t.Errorf("AppliedIndex = %d while deciding, want %d: the batch is not committed yet", got, len(tt.before))
				}
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ApplyDecided error = %v, want %v", err, tt.wantErr)
			}
			if got := calls > 0; got != tt.wantDecided || calls > 1 {
				t.Fatalf("decided called %d times, want it called: %v", calls, tt.wantDecided)
			}
			if tt.wantDecided && (len(decided) != len(res) || &decided[0] != &res[0]) {
				t.Fatalf("decided saw %+v, Apply returned %+v: want the same results", decided, res)
			}
		})
	}
}
