package repository

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

func TestApplyExpireSession(t *testing.T) {
	long := strings.Repeat("s", MaxSourceNameLen+1)
	tests := []struct {
		name    string
		cmds    []any
		wants   []want
		sources []SourceInfo        // Sources() afterwards
		held    map[string][]uint64 // what Read finds afterwards, per source
	}{
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := logOf(1, tt.cmds...)
			// In one batch, and one entry per batch: the same results.
			whole := openTest(t)
			checkResults(t, mustApply(t, whole, log), tt.wants)
			single := openTest(t)
			var got []Result
			for i := range log {
				got = append(got, mustApply(t, single, log[i:i+1])...)
			}
			checkResults(t, got, tt.wants)
			if mustDigest(t, whole) != mustDigest(t, single) {
				t.Error("digest depends on how the log is cut into batches")
			}

			if got, want := whole.AppliedIndex(), uint64(len(log)); got != want {
				t.Errorf("AppliedIndex = %d, want %d (refused entries count as applied)", got, want)
			}
			sources, err := whole.Sources()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sources, tt.sources) {
				t.Errorf("Sources =\n  %+v\nwant\n  %+v", sources, tt.sources)
			}
			for _, s := range sources {
				if got, want := heldSeqs(t, whole, s.Name), tt.held[s.Name]; !reflect.DeepEqual(got, want) {
					t.Errorf("Read(%q) finds %v, want %v", s.Name, got, want)
				}
			}
		})
	}
}

func TestExpireRefusalsSayWhy(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1,
		Register{Source: "a", Session: "s1"},
		ExpireSession{Source: "nobody", Session: "s1"},
		ExpireSession{Source: "a", Session: ""},
	))
	for i, text := range map[int]string{1: `unknown source "nobody"`, 2: "empty session"} {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), text) {
			t.Errorf("entry %d: Err = %v, want it to say %q", res[i].Index, res[i].Err, text)
		}
	}
}

func TestExpirySurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.db")
	r := openAt(t, path)
	log := logOf(1,
		InitGroup{GroupID: "g-1", Index: 1},
		Register{Source: "a", Session: "s1", UnixNano: 10},
		pub("a", 1, 2),
		ExpireSession{Source: "a", Session: "s1", UnixNano: 20},
	)
	mustApply(t, r, log)
	wantDigest := mustDigest(t, r)
	wantInfo, _, _ := r.Source("a")
	r.Close()

	r = openAt(t, path)
	info, ok, err := r.Source("a")
	if err != nil || !ok {
		t.Fatalf("Source after reopen: %v %v", ok, err)
	}
	if want := (SourceInfo{Name: "a", HighSeq: 2, LowSeq: 1, Count: 2, Bytes: 6, CreatedUnixNano: 10, LastRegisterUnixNano: 10, ExpiredSession: "s1", ExpiredUnixNano: 20}); !reflect.DeepEqual(info, want) || !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("after reopen Source = %+v, want %+v", info, want)
	}
	if mustDigest(t, r) != wantDigest {
		t.Error("digest changed across reopen")
	}
	// Replaying the entries after a restart changes nothing.
	for _, x := range mustApply(t, r, log[1:]) {
		if !x.Skipped || x.Expire != nil || x.Register != nil {
			t.Errorf("replayed entry %d: %+v", x.Index, x)
		}
	}
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
	src := openTest(t)
	mustApply(t, src, logOf(1,
		InitGroup{GroupID: "g-1", Index: 1},
		Register{Source: "a", Session: "s1", UnixNano: 1},
		Register{Source: "b", Session: "s1", UnixNano: 2},
		pub("a", 1, 3),
		ExpireSession{Source: "a", Session: "s1", UnixNano: 3},
	))
	wantDigest := mustDigest(t, src)
	wantSources, _ := src.Sources()
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	// Into an empty store, and over a member of the same group that still
	// records the session: both end with exactly the snapshot's.
	empty := openTest(t)
	member := openTest(t)
	mustApply(t, member, logOf(1, InitGroup{GroupID: "g-1", Index: 1}, Register{Source: "a", Session: "s1", UnixNano: 1}, pub("a", 1, 3)))
	for name, r := range map[string]*Repo{"empty": empty, "member": member} {
		if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("%s: Restore: %v", name, err)
		}
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
		if mustDigest(t, r) != wantDigest {
			t.Errorf("%s: restored digest differs", name)
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
	digestOf := func(extra ...any) string {
		r := openTest(t)
		mustApply(t, r, logOf(1, append(pinnedLog(), extra...)...))
		return mustDigest(t, r)
	}
	// pinnedLog: a registered by session "s" at 200; b registered without a
	// session at 300.
	if d := digestOf(); d != pinnedDigest {
		t.Fatalf("digest of a repository without expiries changed: %s, want %s", d, pinnedDigest)
	}
	variants := map[string][]any{
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
	}
	seen := map[string]string{}
	for name, extra := range variants {
		d := digestOf(extra...)
		if name == "no expiry" || strings.HasPrefix(name, "refused") || strings.HasPrefix(name, "unchanged") {
			if d != pinnedDigest {
				t.Errorf("%s: digest differs from the repository without expiries", name)
			}
			continue
		}
		if other, dup := seen[d]; dup {
			t.Errorf("digest blind to the difference between %q and %q", name, other)
		}
		seen[d] = name
		if d == pinnedDigest {
			t.Errorf("digest blind to %s", name)
		}
	}

	// Canonical: an expiry that changed nothing leaves no trace.
	a := digestOf(ExpireSession{Source: "a", Session: "s", UnixNano: 1})
	b := digestOf(ExpireSession{Source: "a", Session: "t", UnixNano: 7}, ExpireSession{Source: "a", Session: "s", UnixNano: 1}, ExpireSession{Source: "a", Session: "s", UnixNano: 9})
	if a != b {
		t.Error("digest depends on expiries that changed nothing")
	}

	// Each recorded field is digested on its own.
	for name, change := range map[string]func(*sourceState){
		"ExpiredSession":  func(st *sourceState) { st.ExpiredSession = "x" },
		"ExpiredUnixNano": func(st *sourceState) { st.ExpiredUnixNano = 2 },
	} {
		r := openTest(t)
		mustApply(t, r, logOf(1, append(pinnedLog(), ExpireSession{Source: "a", Session: "s", UnixNano: 1})...))
		before := mustDigest(t, r)
		if err := r.db.Update(func(tx *bolt.Tx) error {
			st, err := loadState(tx, "a")
			if err != nil {
				return err
			}
			change(&st)
			v, err := encodeState(&st)
			if err != nil {
				return err
			}
			return tx.Bucket(bucketSources).Bucket([]byte("a")).Put(keyState, v)
		}); err != nil {
			t.Fatal(err)
		}
		if mustDigest(t, r) == before {
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
	want := sourceState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: []Range{{6, 8}}, Session: "s", Created: 1, LastRegister: 2, TrimmedThrough: 1}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("pre-expiry state reads as %+v, want %+v", st, want)
	}
	if again, _ := encodeState(&st); !bytes.Equal(again, b) {
		t.Errorf("never expired state encodes as %x, before ExpireSession %x", again, b)
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
