package repository

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestApplyConsumed(t *testing.T) {
	runConsumedCases(t, []consumedCase{
		{
			name: "record new",
			cmds: []any{Register{Source: "a", UnixNano: 1}, Consumed{Source: "a", Receiver: "r1", Seq: 5, UnixNano: 10}},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 5, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r1", Seq: 5, UnixNano: 10}}},
		},
		{
			name: "advance replaces seq and time",
			cmds: []any{
				pub("a", 1, 10),
				Consumed{Source: "a", Receiver: "r1", Seq: 5, UnixNano: 10},
				Consumed{Source: "a", Receiver: "r1", Seq: 6, UnixNano: 20},
				Consumed{Source: "a", Receiver: "r1", Seq: 9, UnixNano: 30},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 10, Stored: 10, HighSeq: 10}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 5, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 6, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 9, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r1", Seq: 9, UnixNano: 30}}},
		},
		{
			name: "lower or equal seq leaves the record unchanged, time included",
			cmds: []any{
				pub("a", 1, 10),
				Consumed{Source: "a", Receiver: "r1", Seq: 7, UnixNano: 10},
				Consumed{Source: "a", Receiver: "r1", Seq: 3, UnixNano: 20},
				Consumed{Source: "a", Receiver: "r1", Seq: 7, UnixNano: 30},
				Consumed{Source: "a", Receiver: "r1", Seq: 1, UnixNano: 40},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 10, Stored: 10, HighSeq: 10}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 7, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 7}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 7}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 7}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r1", Seq: 7, UnixNano: 10}}},
		},
		{
			name: "receivers listed by name, sources independent",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				Register{Source: "b", UnixNano: 2},
				Register{Source: "c", UnixNano: 3},
				Consumed{Source: "a", Receiver: "zed", Seq: 1, UnixNano: 4},
				Consumed{Source: "a", Receiver: "Ann", Seq: 2, UnixNano: 5},
				Consumed{Source: "a", Receiver: "bob", Seq: 3, UnixNano: 6},
				Consumed{Source: "b", Receiver: "bob", Seq: 8, UnixNano: 7},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Register: &RegisterResult{Source: "c", Created: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "zed", Seq: 1, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "Ann", Seq: 2, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "bob", Seq: 3, Advanced: true}},
				{Consumed: &ConsumedResult{Source: "b", Receiver: "bob", Seq: 8, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{
				"a": {{Receiver: "Ann", Seq: 2, UnixNano: 5}, {Receiver: "bob", Seq: 3, UnixNano: 6}, {Receiver: "zed", Seq: 1, UnixNano: 4}},
				"b": {{Receiver: "bob", Seq: 8, UnixNano: 7}},
				"c": {},
			},
		},
	})
}

// consumedCase is one case of TestApplyConsumed and its siblings.
type consumedCase struct {
	name      string
	cmds      []any
	wants     []want
	receivers map[string][]ReceiverPosition // Receivers(source) afterwards, for every source
}

// Positions beyond what the group holds, refusals, and the ignorable flag
// on a known command.
func TestApplyConsumedEdges(t *testing.T) {
	long := strings.Repeat("r", MaxSourceNameLen)
	runConsumedCases(t, []consumedCase{
		{
			name: "seq beyond what the group holds is recorded",
			cmds: []any{pub("a", 1, 2), Consumed{Source: "a", Receiver: "r", Seq: 1 << 40, UnixNano: -3}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 1 << 40, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r", Seq: 1 << 40, UnixNano: -3}}},
		},
		{
			name: "unknown source is refused and not created",
			cmds: []any{
				Consumed{Source: "a", Receiver: "r", Seq: 1},
				Register{Source: "b", UnixNano: 1},
				Consumed{Source: "a", Receiver: "r", Seq: 2},
				Register{Source: "a", UnixNano: 2},
				Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 3},
			},
			wants: []want{
				{Err: ErrUnknownSource},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Err: ErrUnknownSource},
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 3, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r", Seq: 3, UnixNano: 3}}, "b": {}},
		},
		{
			name: "bad source, receiver or seq refused before the source is looked up",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				Consumed{Source: "", Receiver: "r", Seq: 1},
				Consumed{Source: strings.Repeat("a", MaxSourceNameLen+1), Receiver: "r", Seq: 1},
				Consumed{Source: "a", Receiver: "", Seq: 1},
				Consumed{Source: "a", Receiver: long + "r", Seq: 1},
				Consumed{Source: "a", Receiver: "r", Seq: 0},
				Consumed{Source: "unknown", Receiver: "", Seq: 0},
				rawData{byte(CmdConsumed), 0x94, 0xa1, 'a', 0xa1, 'r', 0xff, 0x00},
				Consumed{Source: "a", Receiver: long, Seq: 1, UnixNano: 2},
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Consumed: &ConsumedResult{Source: "a", Receiver: long, Seq: 1, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: long, Seq: 1, UnixNano: 2}}},
		},
		{
			name: "known command with the ignorable flag is applied",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				rawData(append([]byte{byte(IgnorableFlag | CmdConsumed)}, EncodeConsumed(Consumed{Source: "a", Receiver: "r", Seq: 4, UnixNano: 5})[1:]...)),
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 4, Advanced: true}},
			},
			receivers: map[string][]ReceiverPosition{"a": {{Receiver: "r", Seq: 4, UnixNano: 5}}},
		},
	})
}

// runConsumedCases applies each case to a fresh repository and checks its
// results and every source's receivers.
func runConsumedCases(t *testing.T, tests []consumedCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := applyChecked(t, tt.cmds, tt.wants)
			sources, err := r.Sources()
			if err != nil {
				t.Fatal(err)
			}
			if len(sources) != len(tt.receivers) {
				t.Errorf("%d sources, want %d: a Consumed must never create one", len(sources), len(tt.receivers))
			}
			for _, s := range sources {
				got, err := r.Receivers(s.Name)
				if err != nil {
					t.Fatal(err)
				}
				if want := tt.receivers[s.Name]; !reflect.DeepEqual(got, want) {
					t.Errorf("Receivers(%q) =\n  %+v\nwant\n  %+v", s.Name, got, want)
				}
			}
		})
	}
}

// Records in one batch see each other and sources created earlier in the
// batch; splitting the same log differently gives the same results.
func TestConsumedWithinABatch(t *testing.T) {
	cmds := []any{
		pub("a", 1, 3),
		Consumed{Source: "a", Receiver: "r", Seq: 2, UnixNano: 1},
		Consumed{Source: "a", Receiver: "r", Seq: 2, UnixNano: 2},
		Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 3},
	}
	wants := []want{
		{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 2, Advanced: true}},
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 2}},
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 3, Advanced: true}},
	}
	applyBatchedBothWays(t, cmds, wants)
}

func TestConsumedRefusalsSayWhy(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1,
		Register{Source: "a"},
		Consumed{Source: "nobody", Receiver: "r", Seq: 1},
		Consumed{Source: "a", Receiver: "", Seq: 1},
		Consumed{Source: "a", Receiver: "r", Seq: 0},
	))
	checkRefusalsSay(t, res, map[int]string{1: `unknown source "nobody"`, 2: "empty receiver", 3: "sequence number 0"})
}

func TestReceiversReads(t *testing.T) {
	r := openTest(t)
	// A source without positions: no receivers bucket at all.
	mustApply(t, r, logOf(1, Register{Source: "a"}, pub("a", 1, 2)))
	got, err := r.Receivers("a")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Receivers of a source without positions = %#v, %v; want an empty slice", got, err)
	}
	if got, err := r.Receivers("nobody"); !errors.Is(err, ErrUnknownSource) || got != nil {
		t.Errorf("Receivers(nobody) = %v, %v; want ErrUnknownSource", got, err)
	}
	// The slice returned is the caller's.
	mustApply(t, r, logOf(3, Consumed{Source: "a", Receiver: "r", Seq: 1}))
	got, _ = r.Receivers("a")
	got[0].Seq = 99
	if again, _ := r.Receivers("a"); again[0].Seq != 1 {
		t.Errorf("modifying a returned slice changed the repository: %+v", again)
	}
	r.Close()
	if _, err := r.Receivers("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Receivers after Close: %v, want ErrClosed", err)
	}
}

func TestReceiversSurviveReopen(t *testing.T) {
	r := openTest(t)
	log := logOf(1,
		InitGroup{GroupID: "g-1", Index: 1},
		pub("a", 1, 5),
		Consumed{Source: "a", Receiver: "r1", Seq: 2, UnixNano: 1},
		Consumed{Source: "a", Receiver: "r2", Seq: 4, UnixNano: 2},
		Consumed{Source: "a", Receiver: "r1", Seq: 3, UnixNano: 3},
	)
	mustApply(t, r, log)
	r = reopen(t, r)
	got, err := r.Receivers("a")
	if err != nil {
		t.Fatal(err)
	}
	wantPositions := []ReceiverPosition{{Receiver: "r1", Seq: 3, UnixNano: 3}, {Receiver: "r2", Seq: 4, UnixNano: 2}}
	if !reflect.DeepEqual(got, wantPositions) {
		t.Errorf("after reopen Receivers = %+v, want %+v", got, wantPositions)
	}
	// Replaying the entries after a restart changes nothing.
	checkAllSkipped(t, mustApply(t, r, log[2:]))
	// And the positions go on from where they were.
	res := mustApply(t, r, logOf(6, Consumed{Source: "a", Receiver: "r2", Seq: 4, UnixNano: 9}, Consumed{Source: "a", Receiver: "r1", Seq: 5, UnixNano: 9}))
	checkResults(t, res, []want{
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r2", Seq: 4}},
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r1", Seq: 5, Advanced: true}},
	})
}

func TestDigestCoversReceivers(t *testing.T) {
	if d := digestAfter(t, pinnedLog()); d != pinnedDigest {
		t.Fatalf("digest of a repository without receiver positions changed: %s, want %s", d, pinnedDigest)
	}
	checkDigestVariants(t, pinnedLog(), "receiver positions", map[string][]any{
		"no record":              nil,
		"refused unknown source": {Consumed{Source: "c", Receiver: "r", Seq: 1, UnixNano: 1}},
		"refused seq 0":          {Consumed{Source: "a", Receiver: "r", Seq: 0, UnixNano: 1}},
		"refused empty receiver": {Consumed{Source: "a", Receiver: "", Seq: 1, UnixNano: 1}},
		"record":                 {Consumed{Source: "a", Receiver: "r", Seq: 1, UnixNano: 1}},
		"other receiver":         {Consumed{Source: "a", Receiver: "s", Seq: 1, UnixNano: 1}},
		"other source":           {Consumed{Source: "b", Receiver: "r", Seq: 1, UnixNano: 1}},
		"other seq":              {Consumed{Source: "a", Receiver: "r", Seq: 2, UnixNano: 1}},
		"other time":             {Consumed{Source: "a", Receiver: "r", Seq: 1, UnixNano: 2}},
		"two receivers":          {Consumed{Source: "a", Receiver: "r", Seq: 1, UnixNano: 1}, Consumed{Source: "a", Receiver: "s", Seq: 1, UnixNano: 1}},
		"two sources":            {Consumed{Source: "a", Receiver: "r", Seq: 1, UnixNano: 1}, Consumed{Source: "b", Receiver: "r", Seq: 1, UnixNano: 1}},
		"receiver named end":     {Consumed{Source: "a", Receiver: "end", Seq: 1, UnixNano: 1}},
	}, func(name string) bool {
		return name == "no record" || strings.HasPrefix(name, "refused")
	})

	// Canonical: the order in which records were made does not matter, nor
	// does a record that did not advance.
	a := digestAfter(t, pinnedLog(), Consumed{Source: "a", Receiver: "s", Seq: 2, UnixNano: 1}, Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 1})
	b := digestAfter(t, pinnedLog(), Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 1}, Consumed{Source: "a", Receiver: "s", Seq: 2, UnixNano: 1}, Consumed{Source: "a", Receiver: "r", Seq: 2, UnixNano: 9})
	if a != b {
		t.Error("digest depends on the order of receiver records")
	}
}

func TestSnapshotCarriesReceivers(t *testing.T) {
	src := openApplied(t,
		InitGroup{GroupID: "g-1", Index: 1},
		pub("a", 1, 5),
		Register{Source: "b"},
		Consumed{Source: "a", Receiver: "r1", Seq: 2, UnixNano: 1},
		Consumed{Source: "a", Receiver: "r2", Seq: 4, UnixNano: 2},
		Consumed{Source: "b", Receiver: "r1", Seq: 7, UnixNano: 3},
	)
	wantA, _ := src.Receivers("a")
	wantB, _ := src.Receivers("b")

	// Into an empty store, and over a member of the same group with other
	// positions: both end with exactly the snapshot's.
	for name, r := range restoredCopies(t, src, InitGroup{GroupID: "g-1", Index: 1}, pub("a", 1, 1), Consumed{Source: "a", Receiver: "r1", Seq: 9}, Consumed{Source: "a", Receiver: "r3", Seq: 1}) {
		gotA, err := r.Receivers("a")
		if err != nil {
			t.Fatal(err)
		}
		gotB, err := r.Receivers("b")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotA, wantA) || !reflect.DeepEqual(gotB, wantB) {
			t.Errorf("%s: restored Receivers = %+v / %+v, want %+v / %+v", name, gotA, gotB, wantA, wantB)
		}
		// The restored positions take part in later entries.
		res := mustApply(t, r, logOf(7, Consumed{Source: "a", Receiver: "r2", Seq: 3, UnixNano: 9}))
		if res[0].Consumed == nil || res[0].Consumed.Advanced || res[0].Consumed.Seq != 4 {
			t.Errorf("%s: Consumed after restore = %+v", name, res[0].Consumed)
		}
	}
}

func TestReceiverRecordEncoding(t *testing.T) {
	in := receiverRecord{Seq: 1 << 40, UnixNano: -5}
	b, err := encodeReceiver(&in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeReceiver("a", []byte("r"), b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ReceiverPosition{Receiver: "r", Seq: 1 << 40, UnixNano: -5}); got != want {
		t.Errorf("record round trip: %+v, want %+v", got, want)
	}
	zero, _ := encodeReceiver(&receiverRecord{})
	for name, kv := range map[string][2][]byte{
		"garbage":     {[]byte("r"), {0xc1}},
		"no position": {[]byte("r"), zero},
		"empty key":   {{}, b},
		"bucket":      {[]byte("r"), nil},
	} {
		if _, err := decodeReceiver("a", kv[0], kv[1]); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: decodeReceiver = %v, want ErrFormat", name, err)
		}
	}
}
