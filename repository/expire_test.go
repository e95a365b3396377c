package repository

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestApplyExpireSession(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{
			name: "expire the session recorded",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 1, ExpiredSession: "s1", ExpiredUnixNano: 5}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "a stale session, a new publisher having registered meanwhile, changes nothing",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				Register{Source: "a", Session: "s2", UnixNano: 2},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Register: &RegisterResult{Source: "a"}},
				{Expire: &ExpireResult{Source: "a", Session: "s1"}},
			},
			sources: []SourceInfo{{Name: "a", Session: "s2", CreatedUnixNano: 1, LastRegisterUnixNano: 2}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "a repeated expiry changes nothing, not even the time",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 9},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1"}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 1, ExpiredSession: "s1", ExpiredUnixNano: 5}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "register after expiry: a new publisher takes the source over where it stands",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				pub("a", 1, 3),
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
				Register{Source: "a", Session: "s2", UnixNano: 7},
				pub("a", 4, 1),
				ExpireSession{Source: "a", Session: "s1", UnixNano: 8}, // late: s2 owns the source
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
				{Register: &RegisterResult{Source: "a", HighSeq: 3, LowSeq: 1}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 4, LastSeq: 4, Stored: 1, HighSeq: 4}},
				{Expire: &ExpireResult{Source: "a", Session: "s1"}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 4, LowSeq: 1, Count: 4, Bytes: 12, Session: "s2", CreatedUnixNano: 1, LastRegisterUnixNano: 7, ExpiredSession: "s1", ExpiredUnixNano: 5}},
			held:    map[string][]uint64{"a": {1, 2, 3, 4}},
		},
		{
			name: "a second expiry replaces the first",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
				Register{Source: "a", Session: "s2", UnixNano: 7},
				ExpireSession{Source: "a", Session: "s2", UnixNano: 9},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
				{Register: &RegisterResult{Source: "a"}},
				{Expire: &ExpireResult{Source: "a", Session: "s2", Expired: true}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 7, ExpiredSession: "s2", ExpiredUnixNano: 9}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "the same session registered again after its expiry expires again",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
				Register{Source: "a", Session: "s1", UnixNano: 7},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 9},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
				{Register: &RegisterResult{Source: "a"}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 7, ExpiredSession: "s1", ExpiredUnixNano: 9}},
			held:    map[string][]uint64{"a": nil},
		},
	})
}

// What an ExpireSession refuses: a source without a session, one the group
// does not hold, an empty session and bad names.
func TestApplyExpireSessionRefused(t *testing.T) {
	long := strings.Repeat("s", MaxSourceNameLen+1)
	runSourceCases(t, []sourceCase{
		{
			name: "a source without a session (created by a publish, or registered without one) has none to expire",
			cmds: []any{
				pub("a", 1, 1),
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5},
				Register{Source: "b", UnixNano: 1},
				ExpireSession{Source: "b", Session: "s1", UnixNano: 5},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 1, Stored: 1, HighSeq: 1}},
				{Expire: &ExpireResult{Source: "a", Session: "s1"}},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Expire: &ExpireResult{Source: "b", Session: "s1"}},
			},
			sources: []SourceInfo{
				{Name: "a", HighSeq: 1, LowSeq: 1, Count: 1, Bytes: 3},
				{Name: "b", CreatedUnixNano: 1, LastRegisterUnixNano: 1},
			},
			held: map[string][]uint64{"a": {1}, "b": nil},
		},
		{
			name: "unknown source is refused and not created",
			cmds: []any{
				ExpireSession{Source: "a", Session: "s1", UnixNano: 1},
				Register{Source: "b", Session: "s1", UnixNano: 2},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 3},
				Register{Source: "a", Session: "s1", UnixNano: 4},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 5}, // created earlier in the batch
			},
			wants: []want{
				{Err: ErrUnknownSource},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Err: ErrUnknownSource},
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{
				{Name: "a", CreatedUnixNano: 4, LastRegisterUnixNano: 4, ExpiredSession: "s1", ExpiredUnixNano: 5},
				{Name: "b", Session: "s1", CreatedUnixNano: 2, LastRegisterUnixNano: 2},
			},
			held: map[string][]uint64{"a": nil, "b": nil},
		},
		{
			name: "an empty session and bad source names are refused before the source is looked up",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				ExpireSession{Source: "a", Session: "", UnixNano: 2},
				ExpireSession{Source: "", Session: "s1", UnixNano: 2},
				ExpireSession{Source: long, Session: "s1", UnixNano: 2},
				ExpireSession{Source: "unknown", Session: "", UnixNano: 2},
				rawData{byte(CmdExpireSession), 0x93, 0xa1, 'a', 0x01, 0x02},
				rawData{byte(CmdExpireSession), 0x92, 0xa1, 'a', 0xa2, 's', '1'},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
			},
			sources: []SourceInfo{{Name: "a", Session: "s1", CreatedUnixNano: 1, LastRegisterUnixNano: 1}},
			held:    map[string][]uint64{"a": nil},
		},
	})
}

// An expiry changes only the session of its own source, and the ignorable
// flag does not stop a known command.
func TestApplyExpireSessionTouchesOnlyTheSession(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{
			name: "sources expire independently",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				Register{Source: "b", Session: "s1", UnixNano: 2},
				ExpireSession{Source: "b", Session: "s1", UnixNano: 3},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Expire: &ExpireResult{Source: "b", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{
				{Name: "a", Session: "s1", CreatedUnixNano: 1, LastRegisterUnixNano: 1},
				{Name: "b", CreatedUnixNano: 2, LastRegisterUnixNano: 2, ExpiredSession: "s1", ExpiredUnixNano: 3},
			},
			held: map[string][]uint64{"a": nil, "b": nil},
		},
		{
			name: "an expiry leaves messages, gaps, retention and positions alone",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				sized("a", 1, 3, 2),
				sized("a", 6, 2, 2), // gap [4,5]
				Trim{Source: "a", Through: 1},
				Consumed{Source: "a", Receiver: "r", Seq: 2, UnixNano: 3},
				ExpireSession{Source: "a", Session: "s1", UnixNano: 4},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 6, LastSeq: 7, Stored: 2, HighSeq: 7, NewGap: &Range{4, 5}}},
				{Trim: &TrimResult{Source: "a", Through: 1, Advanced: true, Dropped: 1, DroppedBytes: 2, LowSeq: 2}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 2, Advanced: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 7, LowSeq: 2, Count: 4, Bytes: 8, Gaps: []Range{{4, 5}}, TrimmedThrough: 1,
				CreatedUnixNano: 1, LastRegisterUnixNano: 1, ExpiredSession: "s1", ExpiredUnixNano: 4}},
			held: map[string][]uint64{"a": {2, 3, 6, 7}},
		},
		{
			name: "known command with the ignorable flag is applied",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				rawData(append([]byte{byte(IgnorableFlag | CmdExpireSession)}, EncodeExpireSession(ExpireSession{Source: "a", Session: "s1", UnixNano: 2})[1:]...)),
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Expire: &ExpireResult{Source: "a", Session: "s1", Expired: true}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 1, ExpiredSession: "s1", ExpiredUnixNano: 2}},
			held:    map[string][]uint64{"a": nil},
		},
	})
}

func TestExpireRefusalsSayWhy(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1,
		Register{Source: "a", Session: "s1"},
		ExpireSession{Source: "nobody", Session: "s1"},
		ExpireSession{Source: "a", Session: ""},
	))
	checkRefusalsSay(t, res, map[int]string{1: `unknown source "nobody"`, 2: "empty session"})
}

func TestExpirySurvivesReopen(t *testing.T) {
	r := openTest(t)
	log := logOf(1,
		InitGroup{GroupID: "g-1", Index: 1},
		Register{Source: "a", Session: "s1", UnixNano: 10},
		pub("a", 1, 2),
		ExpireSession{Source: "a", Session: "s1", UnixNano: 20},
	)
	mustApply(t, r, log)
	wantInfo, _, _ := r.Source("a")
	r = reopen(t, r)
	info, ok, err := r.Source("a")
	if err != nil || !ok {
		t.Fatalf("Source after reopen: %v %v", ok, err)
	}
	if want := (SourceInfo{Name: "a", HighSeq: 2, LowSeq: 1, Count: 2, Bytes: 6, CreatedUnixNano: 10, LastRegisterUnixNano: 10, ExpiredSession: "s1", ExpiredUnixNano: 20}); !reflect.DeepEqual(info, want) || !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("after reopen Source = %+v, want %+v", info, want)
	}
	// Replaying the entries after a restart changes nothing.
	checkAllSkipped(t, mustApply(t, r, log[1:]))
	// And sessions go on from where they were.
	res := mustApply(t, r, logOf(5,
		ExpireSession{Source: "a", Session: "s1", UnixNano: 30},
		Register{Source: "a", Session: "s2", UnixNano: 40},
		ExpireSession{Source: "a", Session: "s1", UnixNano: 50},
		ExpireSession{Source: "a", Session: "s2", UnixNano: 60},
	))
	checkResults(t, res, []want{
		{Expire: &ExpireResult{Source: "a", Session: "s1"}},
		{Register: &RegisterResult{Source: "a", HighSeq: 2, LowSeq: 1}},
		{Expire: &ExpireResult{Source: "a", Session: "s1"}},
		{Expire: &ExpireResult{Source: "a", Session: "s2", Expired: true}},
	})
	if info, _, _ := r.Source("a"); info.Session != "" || info.ExpiredSession != "s2" || info.ExpiredUnixNano != 60 || info.LastRegisterUnixNano != 40 {
		t.Errorf("Source = %+v", info)
	}
}

func TestSnapshotCarriesExpiries(t *testing.T) {
	src := openApplied(t,
		InitGroup{GroupID: "g-1", Index: 1},
		Register{Source: "a", Session: "s1", UnixNano: 1},
		Register{Source: "b", Session: "s1", UnixNano: 2},
		pub("a", 1, 3),
		ExpireSession{Source: "a", Session: "s1", UnixNano: 3},
	)
	wantSources, _ := src.Sources()

	// Into an empty store, and over a member of the same group that still
	// records the session: both end with exactly the snapshot's.
	for name, r := range restoredCopies(t, src, InitGroup{GroupID: "g-1", Index: 1}, Register{Source: "a", Session: "s1", UnixNano: 1}, pub("a", 1, 3)) {
		got, err := r.Sources()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantSources) {
			t.Errorf("%s: restored Sources = %+v, want %+v", name, got, wantSources)
		}
		if got[0].Session != "" || got[0].ExpiredSession != "s1" {
			t.Errorf("%s: restored source a = %+v", name, got[0])
		}
		// The restored sessions take part in later entries.
		res := mustApply(t, r, logOf(6,
			ExpireSession{Source: "a", Session: "s1", UnixNano: 9},
			ExpireSession{Source: "b", Session: "s1", UnixNano: 9},
		))
		checkResults(t, res, []want{
			{Expire: &ExpireResult{Source: "a", Session: "s1"}},
			{Expire: &ExpireResult{Source: "b", Session: "s1", Expired: true}},
		})
	}
}

func TestDigestCoversExpiries(t *testing.T) {
	// pinnedLog: a registered by session "s" at 200; b registered without a
	// session at 300.
	if d := digestAfter(t, pinnedLog()); d != pinnedDigest {
		t.Fatalf("digest of a repository without expiries changed: %s, want %s", d, pinnedDigest)
	}
	checkDigestVariants(t, pinnedLog(), "expiries", map[string][]any{
		"no expiry":                  nil,
		"refused unknown source":     {ExpireSession{Source: "c", Session: "s", UnixNano: 1}},
		"refused empty session":      {ExpireSession{Source: "a", Session: "", UnixNano: 1}},
		"unchanged stale session":    {ExpireSession{Source: "a", Session: "t", UnixNano: 1}},
		"unchanged b has no session": {ExpireSession{Source: "b", Session: "s", UnixNano: 1}},
		"expired":                    {ExpireSession{Source: "a", Session: "s", UnixNano: 1}},
		"expired at another time":    {ExpireSession{Source: "a", Session: "s", UnixNano: 2}},
		"expired, registered again":  {ExpireSession{Source: "a", Session: "s", UnixNano: 1}, Register{Source: "a", Session: "s", UnixNano: 200}},
		"expired, another publisher": {ExpireSession{Source: "a", Session: "s", UnixNano: 1}, Register{Source: "a", Session: "t", UnixNano: 200}},
		"another session expired":    {Register{Source: "a", Session: "t", UnixNano: 200}, ExpireSession{Source: "a", Session: "t", UnixNano: 1}},
		"session t registered":       {Register{Source: "a", Session: "t", UnixNano: 200}},
		"b expired":                  {Register{Source: "b", Session: "s", UnixNano: 300}, ExpireSession{Source: "b", Session: "s", UnixNano: 1}},
		"b registered":               {Register{Source: "b", Session: "s", UnixNano: 300}},
	}, func(name string) bool {
		return name == "no expiry" || strings.HasPrefix(name, "refused") || strings.HasPrefix(name, "unchanged")
	})

	// Canonical: an expiry that changed nothing leaves no trace.
	a := digestAfter(t, pinnedLog(), ExpireSession{Source: "a", Session: "s", UnixNano: 1})
	b := digestAfter(t, pinnedLog(), ExpireSession{Source: "a", Session: "t", UnixNano: 7}, ExpireSession{Source: "a", Session: "s", UnixNano: 1}, ExpireSession{Source: "a", Session: "s", UnixNano: 9})
	if a != b {
		t.Error("digest depends on expiries that changed nothing")
	}

	// Each recorded field is digested on its own.
	for name, change := range map[string]func(*sourceState){
		"ExpiredSession":  func(st *sourceState) { st.ExpiredSession = "x" },
		"ExpiredUnixNano": func(st *sourceState) { st.ExpiredUnixNano = 2 },
	} {
		if !digestSeesEdit(t, append(pinnedLog(), ExpireSession{Source: "a", Session: "s", UnixNano: 1}), "a", change) {
			t.Errorf("digest blind to %s", name)
		}
	}
}

// preExpiryState is storedState as written by binaries from before
// ExpireSession.
type preExpiryState struct {
	HighSeq        uint64      `msgpack:"h,omitempty"`
	LowSeq         uint64      `msgpack:"l,omitempty"`
	Count          uint64      `msgpack:"n,omitempty"`
	Bytes          uint64      `msgpack:"b,omitempty"`
	Gaps           [][2]uint64 `msgpack:"g,omitempty"`
	Session        string      `msgpack:"s,omitempty"`
	Created        int64       `msgpack:"c,omitempty"`
	LastRegister   int64       `msgpack:"r,omitempty"`
	TrimmedThrough uint64      `msgpack:"t,omitempty"`
}

// The source state stays readable both ways without a format change: a state
// written before ExpireSession reads as never expired (and encodes exactly as
// it did), and a binary from before it reads an expired state, ignoring the
// expiry.
func TestSourceStateExpiryCompatibility(t *testing.T) {
	old := preExpiryState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: [][2]uint64{{6, 8}}, Session: "s", Created: 1, LastRegister: 2, TrimmedThrough: 1}
	b, err := msgpack.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	// Trimmed before the released gaps were recorded: none is known, the
	// floor is TrimmedThrough.
	want := sourceState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: []Range{{6, 8}}, Session: "s", Created: 1, LastRegister: 2, TrimmedThrough: 1, ReleasedFloor: 1}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("pre-expiry state reads as %+v, want %+v", st, want)
	}
	// Encoded again it gains the released gaps' keys (it was trimmed), which
	// a binary from before ExpireSession ignores: it reads what it wrote.
	again, _ := encodeState(&st)
	var reread preExpiryState
	if err := msgpack.Unmarshal(again, &reread); err != nil || !reflect.DeepEqual(reread, old) {
		t.Errorf("never expired state encodes as %x, which an older binary reads as %+v (%v), want %+v", again, reread, err, old)
	}

	st.Session, st.ExpiredSession, st.ExpiredUnixNano = "", "s", 7
	nb, err := encodeState(&st)
	if err != nil {
		t.Fatal(err)
	}
	var seenByOld preExpiryState
	if err := msgpack.Unmarshal(nb, &seenByOld); err != nil {
		t.Fatalf("a binary from before ExpireSession cannot read an expired state: %v", err)
	}
	if wantOld := (preExpiryState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: [][2]uint64{{6, 8}}, Created: 1, LastRegister: 2, TrimmedThrough: 1}); !reflect.DeepEqual(seenByOld, wantOld) {
		t.Errorf("a binary from before ExpireSession reads %+v, want %+v", seenByOld, wantOld)
	}
	back, err := decodeState(nb)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("expired state round trip: %+v, want %+v", back, st)
	}
}
