package repository

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// sized publishes n messages of size bytes each, first..first+n-1.
func sized(src string, first uint64, n, size int) Publish {
	c := Publish{Source: src, FirstSeq: first, Payloads: make([][]byte, n)}
	for i := range c.Payloads {
		c.Payloads[i] = bytes.Repeat([]byte{byte(first) + byte(i)}, size)
	}
	return c
}

// seqRange lists first..last.
func seqRange(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

func TestApplyTrim(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{
			name: "trim the middle",
			cmds: []any{sized("a", 1, 10, 10), Trim{Source: "a", Through: 4, Reason: "messages", UnixNano: 1}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 10, Stored: 10, HighSeq: 10}},
				{Trim: &TrimResult{Source: "a", Through: 4, Advanced: true, Dropped: 4, DroppedBytes: 40, LowSeq: 5}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 10, LowSeq: 5, Count: 6, Bytes: 60, TrimmedThrough: 4}},
			held:    map[string][]uint64{"a": seqRange(5, 10)},
		},
		{
			name: "trim everything keeps HighSeq: the publisher resumes after it",
			cmds: []any{
				Register{Source: "a", Session: "s1", UnixNano: 1},
				sized("a", 1, 5, 3),
				Trim{Source: "a", Through: 5, Reason: "age", UnixNano: 2},
				Register{Source: "a", Session: "s2", UnixNano: 3},
				sized("a", 6, 1, 7),
			},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 5, Stored: 5, HighSeq: 5}},
				{Trim: &TrimResult{Source: "a", Through: 5, Advanced: true, Dropped: 5, DroppedBytes: 15}},
				{Register: &RegisterResult{Source: "a", HighSeq: 5}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 6, LastSeq: 6, Stored: 1, HighSeq: 6}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 6, LowSeq: 6, Count: 1, Bytes: 7, TrimmedThrough: 5, Session: "s2", CreatedUnixNano: 1, LastRegisterUnixNano: 3}},
			held:    map[string][]uint64{"a": {6}},
		},
		{
			name: "everything trimmed, nothing published since",
			cmds: []any{sized("a", 1, 3, 2), Trim{Source: "a", Through: 3}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Trim: &TrimResult{Source: "a", Through: 3, Advanced: true, Dropped: 3, DroppedBytes: 6}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 3, TrimmedThrough: 3}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "through beyond HighSeq releases only up to HighSeq",
			cmds: []any{sized("a", 1, 3, 1), Trim{Source: "a", Through: 100}, sized("a", 4, 2, 1), Trim{Source: "a", Through: 100}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Trim: &TrimResult{Source: "a", Through: 3, Advanced: true, Dropped: 3, DroppedBytes: 3}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 4, LastSeq: 5, Stored: 2, HighSeq: 5}},
				{Trim: &TrimResult{Source: "a", Through: 5, Advanced: true, Dropped: 2, DroppedBytes: 2}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 5, TrimmedThrough: 5}},
			held:    map[string][]uint64{"a": nil},
		},
		{
			name: "the same Through twice, then a lower one: nothing more dropped",
			cmds: []any{
				sized("a", 1, 10, 1),
				Trim{Source: "a", Through: 4, UnixNano: 1},
				Trim{Source: "a", Through: 4, UnixNano: 2},
				Trim{Source: "a", Through: 2, UnixNano: 3},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 10, Stored: 10, HighSeq: 10}},
				{Trim: &TrimResult{Source: "a", Through: 4, Advanced: true, Dropped: 4, DroppedBytes: 4, LowSeq: 5}},
				{Trim: &TrimResult{Source: "a", Through: 4, LowSeq: 5}},
				{Trim: &TrimResult{Source: "a", Through: 4, LowSeq: 5}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 10, LowSeq: 5, Count: 6, Bytes: 6, TrimmedThrough: 4}},
			held:    map[string][]uint64{"a": seqRange(5, 10)},
		},
		{
			name: "a source without messages has nothing to release",
			cmds: []any{Register{Source: "a", UnixNano: 1}, Trim{Source: "a", Through: 5}},
			wants: []want{
				{Register: &RegisterResult{Source: "a", Created: true}},
				{Trim: &TrimResult{Source: "a"}},
			},
			sources: []SourceInfo{{Name: "a", CreatedUnixNano: 1, LastRegisterUnixNano: 1}},
			held:    map[string][]uint64{"a": nil},
		},
	})
}

// What a Trim refuses: a source the group does not hold, through 0 and bad
// names.
func TestApplyTrimRefused(t *testing.T) {
	long := strings.Repeat("s", MaxSourceNameLen+1)
	runSourceCases(t, []sourceCase{
		{
			name: "unknown source is refused and not created",
			cmds: []any{
				Trim{Source: "a", Through: 1},
				Register{Source: "b", UnixNano: 1},
				Trim{Source: "a", Through: 1},
				sized("a", 1, 2, 1),
				Trim{Source: "a", Through: 1},
			},
			wants: []want{
				{Err: ErrUnknownSource},
				{Register: &RegisterResult{Source: "b", Created: true}},
				{Err: ErrUnknownSource},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Trim: &TrimResult{Source: "a", Through: 1, Advanced: true, Dropped: 1, DroppedBytes: 1, LowSeq: 2}},
			},
			sources: []SourceInfo{
				{Name: "a", HighSeq: 2, LowSeq: 2, Count: 1, Bytes: 1, TrimmedThrough: 1},
				{Name: "b", CreatedUnixNano: 1, LastRegisterUnixNano: 1},
			},
			held: map[string][]uint64{"a": {2}, "b": nil},
		},
		{
			name: "through 0 and bad source names are refused before the source is looked up",
			cmds: []any{
				sized("a", 1, 2, 1),
				Trim{Source: "a", Through: 0},
				Trim{Source: "", Through: 1},
				Trim{Source: long, Through: 1},
				Trim{Source: "unknown", Through: 0},
				rawData{byte(CmdTrim), 0x94, 0xa1, 'a', 0xff, 0xa0, 0x00},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 2, LowSeq: 1, Count: 2, Bytes: 2}},
			held:    map[string][]uint64{"a": {1, 2}},
		},
	})
}

// A Trim and the gaps it meets, what is published below it afterwards,
// sources apart, and the ignorable flag on a known command.
func TestApplyTrimGapsAndRetention(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{
			name: "gaps below are dropped, a straddling one clipped, those above kept",
			cmds: []any{
				sized("a", 1, 2, 1),  // 1 2
				sized("a", 5, 2, 1),  // gap [3,4], 5 6
				sized("a", 10, 2, 1), // gap [7,9], 10 11
				sized("a", 15, 1, 1), // gap [12,14], 15
				Trim{Source: "a", Through: 8},
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 5, LastSeq: 6, Stored: 2, HighSeq: 6, NewGap: &Range{3, 4}}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 10, LastSeq: 11, Stored: 2, HighSeq: 11, NewGap: &Range{7, 9}}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 15, LastSeq: 15, Stored: 1, HighSeq: 15, NewGap: &Range{12, 14}}},
				{Trim: &TrimResult{Source: "a", Through: 8, Advanced: true, Dropped: 4, DroppedBytes: 4, LowSeq: 10}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 15, LowSeq: 10, Count: 3, Bytes: 3, Gaps: []Range{{9, 9}, {12, 14}}, TrimmedThrough: 8}},
			held:    map[string][]uint64{"a": {10, 11, 15}},
		},
		{
			name: "through at the end of a gap drops the gap whole",
			cmds: []any{sized("a", 1, 2, 1), sized("a", 5, 2, 1), Trim{Source: "a", Through: 4}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 5, LastSeq: 6, Stored: 2, HighSeq: 6, NewGap: &Range{3, 4}}},
				{Trim: &TrimResult{Source: "a", Through: 4, Advanced: true, Dropped: 2, DroppedBytes: 2, LowSeq: 5}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 6, LowSeq: 5, Count: 2, Bytes: 2, TrimmedThrough: 4}},
			held:    map[string][]uint64{"a": {5, 6}},
		},
		{
			name: "a gap starting at 1 (joined late), trimmed into, then repaired",
			cmds: []any{
				sized("a", 10, 2, 1), // gap [1,9]
				Trim{Source: "a", Through: 5},
				sized("a", 3, 6, 1), // 3..5 released (never held: lost), 6..8 fill the gap
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 10, LastSeq: 11, Stored: 2, HighSeq: 11, NewGap: &Range{1, 9}}},
				{Trim: &TrimResult{Source: "a", Through: 5, Advanced: true, LowSeq: 10}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 3, LastSeq: 8, Stored: 3, HighSeq: 11, BelowRetention: 3, Lost: []Range{{3, 5}}}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 11, LowSeq: 6, Count: 5, Bytes: 5, Gaps: []Range{{9, 9}}, TrimmedThrough: 5}},
			held:    map[string][]uint64{"a": {6, 7, 8, 10, 11}},
		},
		{
			name: "a publish at or below TrimmedThrough is not stored, whatever its payload",
			cmds: []any{
				sized("a", 1, 10, 2),
				Trim{Source: "a", Through: 6},
				sized("a", 3, 6, 5), // 3..6 released, 7 and 8 held with other bytes
				sized("a", 1, 1, 2),
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 10, Stored: 10, HighSeq: 10}},
				{Trim: &TrimResult{Source: "a", Through: 6, Advanced: true, Dropped: 6, DroppedBytes: 12, LowSeq: 7}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 3, LastSeq: 8, Duplicates: 2, HighSeq: 10, Conflicts: 2, FirstConflict: 7, BelowRetention: 4}},
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 1, HighSeq: 10, BelowRetention: 1}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 10, LowSeq: 7, Count: 4, Bytes: 8, TrimmedThrough: 6}},
			held:    map[string][]uint64{"a": seqRange(7, 10)},
		},
		{
			name: "sources are trimmed independently",
			cmds: []any{sized("a", 1, 3, 1), sized("b", 1, 3, 1), Trim{Source: "b", Through: 2}},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Publish: &PublishResult{Source: "b", FirstSeq: 1, LastSeq: 3, Stored: 3, HighSeq: 3}},
				{Trim: &TrimResult{Source: "b", Through: 2, Advanced: true, Dropped: 2, DroppedBytes: 2, LowSeq: 3}},
			},
			sources: []SourceInfo{
				{Name: "a", HighSeq: 3, LowSeq: 1, Count: 3, Bytes: 3},
				{Name: "b", HighSeq: 3, LowSeq: 3, Count: 1, Bytes: 1, TrimmedThrough: 2},
			},
			held: map[string][]uint64{"a": {1, 2, 3}, "b": {3}},
		},
		{
			name: "known command with the ignorable flag is applied",
			cmds: []any{
				sized("a", 1, 2, 1),
				rawData(append([]byte{byte(IgnorableFlag | CmdTrim)}, EncodeTrim(Trim{Source: "a", Through: 1})[1:]...)),
			},
			wants: []want{
				{Publish: &PublishResult{Source: "a", FirstSeq: 1, LastSeq: 2, Stored: 2, HighSeq: 2}},
				{Trim: &TrimResult{Source: "a", Through: 1, Advanced: true, Dropped: 1, DroppedBytes: 1, LowSeq: 2}},
			},
			sources: []SourceInfo{{Name: "a", HighSeq: 2, LowSeq: 2, Count: 1, Bytes: 1, TrimmedThrough: 1}},
			held:    map[string][]uint64{"a": {2}},
		},
	})
}

func TestTrimRefusalsSayWhy(t *testing.T) {
	r := openTest(t)
	res := mustApply(t, r, logOf(1,
		Register{Source: "a"},
		Trim{Source: "nobody", Through: 1},
		Trim{Source: "a", Through: 0},
	))
	checkRefusalsSay(t, res, map[int]string{1: `unknown source "nobody"`, 2: "sequence number 0"})
}

// A trim that deletes many messages, across many bbolt pages, leaves exactly
// what a straight log of the remaining messages would hold.
func TestTrimManyMessages(t *testing.T) {
	const n = 20000
	r := openTest(t)
	var cmds []any
	for first := uint64(1); first <= n; first += 500 {
		cmds = append(cmds, sized("a", first, 500, 100))
	}
	mustApply(t, r, logOf(1, cmds...))
	res := mustApply(t, r, logOf(uint64(len(cmds)+1), Trim{Source: "a", Through: n - 7}))
	if tr := res[0].Trim; tr == nil || tr.Dropped != n-7 || tr.DroppedBytes != (n-7)*100 || tr.LowSeq != n-6 {
		t.Fatalf("Trim = %+v", res[0].Trim)
	}
	if got := heldSeqs(t, r, "a"); !reflect.DeepEqual(got, seqRange(n-6, n)) {
		t.Errorf("Read finds %v", got)
	}
	info, _, _ := r.Source("a")
	if info.Count != 7 || info.Bytes != 700 || info.LowSeq != n-6 || info.HighSeq != n {
		t.Errorf("Source = %+v", info)
	}
}

func TestRetentionPlan(t *testing.T) {
	// Source a: 1..10 of 10 bytes each. Source g: 1, 2, 5, 6, 10 of 10, 20,
	// 30, 40, 50 bytes (gaps [3,4] and [7,9]). Source t: 1..10 of 10 bytes,
	// trimmed through 4. Source e: registered, nothing published.
	setup := []any{
		sized("a", 1, 10, 10),
		sized("g", 1, 1, 10), sized("g", 2, 1, 20), sized("g", 5, 1, 30), sized("g", 6, 1, 40), sized("g", 10, 1, 50),
		sized("t", 1, 10, 10), Trim{Source: "t", Through: 4},
		Register{Source: "e"},
	}
	tests := []struct {
		name                  string
		source                string
		maxBytes, maxMessages uint64
		through               uint64
		reason                string
	}{
		{"no limits", "a", 0, 0, 0, ""},
		{"fits exactly", "a", 100, 10, 0, ""},
		{"fits loosely", "a", 1 << 30, 1 << 30, 0, ""},
		{"by messages", "a", 0, 6, 4, RetentionMessages},
		{"by bytes", "a", 55, 0, 5, RetentionBytes},
		{"bytes exactly at a message boundary", "a", 50, 0, 5, RetentionBytes},
		{"both, messages decide", "a", 75, 5, 5, RetentionMessages},
		{"both, bytes decide", "a", 35, 8, 7, RetentionBytes},
		{"both decide at once", "a", 50, 5, 5, RetentionBytes},
		{"keep one message", "a", 0, 1, 9, RetentionMessages},
		{"newest message alone too big: everything", "a", 5, 0, 10, RetentionBytes},
		{"gaps: through is a held message", "g", 0, 2, 5, RetentionMessages},
		{"gaps: by bytes", "g", 100, 0, 5, RetentionBytes},
		{"gaps: by bytes, keep the newest", "g", 50, 0, 6, RetentionBytes},
		{"after a trim: from the oldest left", "t", 0, 3, 7, RetentionMessages},
		{"after a trim: fits", "t", 60, 6, 0, ""},
		{"no messages", "e", 1, 1, 0, ""},
	}
	r := openApplied(t, setup...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			through, reason, err := r.RetentionPlan(tt.source, tt.maxBytes, tt.maxMessages)
			if err != nil {
				t.Fatal(err)
			}
			if through != tt.through || reason != tt.reason {
				t.Errorf("RetentionPlan(%q, %d, %d) = %d, %q; want %d, %q", tt.source, tt.maxBytes, tt.maxMessages, through, reason, tt.through, tt.reason)
			}
			if through == 0 {
				return
			}
			// Applying the plan makes the source fit, and it is the smallest
			// Through that does: the last message it drops was needed.
			c := openApplied(t, setup...)
			before, _ := c.Read(tt.source, 0, ^uint64(0), 0, 0)
			res := mustApply(t, c, logOf(uint64(len(setup)+1), Trim{Source: tt.source, Through: through, Reason: reason}))
			if res[0].Trim == nil || !res[0].Trim.Advanced {
				t.Fatalf("Trim of the plan: %+v", res[0])
			}
			info, _, _ := c.Source(tt.source)
			fits := func(count, size uint64) bool {
				return (tt.maxBytes == 0 || size <= tt.maxBytes) && (tt.maxMessages == 0 || count <= tt.maxMessages)
			}
			if !fits(info.Count, info.Bytes) {
				t.Errorf("after Trim through %d the source holds %d messages of %d bytes", through, info.Count, info.Bytes)
			}
			last := -1
			for i, m := range before {
				if m.Seq == through {
					last = i
				}
			}
			if last < 0 {
				t.Fatalf("through %d is not a held message", through)
			}
			if fits(info.Count+1, info.Bytes+uint64(len(before[last].Payload))) {
				t.Errorf("through %d is not the smallest: keeping message %d fits too", through, through)
			}
			if again, _, _ := c.RetentionPlan(tt.source, tt.maxBytes, tt.maxMessages); again != 0 {
				t.Errorf("plan after applying the plan = %d, want 0", again)
			}
		})
	}

	if _, _, err := r.RetentionPlan("nobody", 1, 1); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("RetentionPlan(nobody) = %v, want ErrUnknownSource", err)
	}
	r.Close()
	if _, _, err := r.RetentionPlan("a", 1, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("RetentionPlan after Close = %v, want ErrClosed", err)
	}
}

func TestTrimSurvivesReopen(t *testing.T) {
	r := openTest(t)
	log := logOf(1,
		InitGroup{GroupID: "g-1", Index: 1},
		sized("a", 1, 10, 4),
		sized("a", 15, 1, 4), // gap [11,14]
		Trim{Source: "a", Through: 12, Reason: "bytes", UnixNano: 1},
	)
	mustApply(t, r, log)
	wantInfo, _, _ := r.Source("a")
	r = reopen(t, r)
	info, ok, err := r.Source("a")
	if err != nil || !ok {
		t.Fatalf("Source after reopen: %v %v", ok, err)
	}
	if want := (SourceInfo{Name: "a", HighSeq: 15, LowSeq: 15, Count: 1, Bytes: 4, Gaps: []Range{{13, 14}}, TrimmedThrough: 12}); !reflect.DeepEqual(info, want) || !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("after reopen Source = %+v, want %+v", info, want)
	}
	// Replaying the entries after a restart changes nothing.
	checkAllSkipped(t, mustApply(t, r, log[1:]))
	// And retention goes on from where it was.
	res := mustApply(t, r, logOf(5, sized("a", 10, 5, 4), Trim{Source: "a", Through: 11}, Trim{Source: "a", Through: 14}))
	checkResults(t, res, []want{
		// 10 was held until released; 11 and 12 were released in a gap.
		{Publish: &PublishResult{Source: "a", FirstSeq: 10, LastSeq: 14, Stored: 2, HighSeq: 15, BelowRetention: 3, Lost: []Range{{11, 12}}}},
		{Trim: &TrimResult{Source: "a", Through: 12, LowSeq: 13}},
		{Trim: &TrimResult{Source: "a", Through: 14, Advanced: true, Dropped: 2, DroppedBytes: 8, LowSeq: 15}},
	})
}

func TestSnapshotCarriesTrims(t *testing.T) {
	src := openApplied(t,
		InitGroup{GroupID: "g-1", Index: 1},
		sized("a", 1, 10, 3),
		sized("b", 1, 3, 3),
		Trim{Source: "a", Through: 6},
		Trim{Source: "b", Through: 3},
	)
	wantSources, _ := src.Sources()

	// Into an empty store, and over a member of the same group that holds
	// the released messages: both end with exactly the snapshot's.
	for name, r := range restoredCopies(t, src, InitGroup{GroupID: "g-1", Index: 1}, sized("a", 1, 10, 3), sized("b", 1, 3, 3)) {
		got, err := r.Sources()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantSources) {
			t.Errorf("%s: restored Sources = %+v, want %+v", name, got, wantSources)
		}
		if held := heldSeqs(t, r, "a"); !reflect.DeepEqual(held, seqRange(7, 10)) {
			t.Errorf("%s: restored source a holds %v", name, held)
		}
		// The restored retention point takes part in later entries.
		res := mustApply(t, r, logOf(6, sized("a", 5, 3, 3), Trim{Source: "b", Through: 2}))
		checkResults(t, res, []want{
			{Publish: &PublishResult{Source: "a", FirstSeq: 5, LastSeq: 7, Duplicates: 1, HighSeq: 10, BelowRetention: 2}},
			{Trim: &TrimResult{Source: "b", Through: 3}},
		})
	}
}

func TestDigestCoversTrims(t *testing.T) {
	// pinnedLog: a holds 1..3 and 6..7 (gap [4,5]); b holds nothing.
	if d := digestAfter(t, pinnedLog()); d != pinnedDigest {
		t.Fatalf("digest of a repository without trims changed: %s, want %s", d, pinnedDigest)
	}
	checkDigestVariants(t, pinnedLog(), "trims", map[string][]any{
		"no trim":                  nil,
		"refused unknown source":   {Trim{Source: "c", Through: 1}},
		"refused through 0":        {Trim{Source: "a", Through: 0}},
		"nothing to release in b":  {Trim{Source: "b", Through: 5}},
		"through 1":                {Trim{Source: "a", Through: 1}},
		"through 2":                {Trim{Source: "a", Through: 2}},
		"through 3":                {Trim{Source: "a", Through: 3}},
		"through 4, inside a gap":  {Trim{Source: "a", Through: 4}},
		"through 5, end of a gap":  {Trim{Source: "a", Through: 5}},
		"through 7, everything":    {Trim{Source: "a", Through: 7}},
		"through 2 with a new one": {Trim{Source: "a", Through: 2}, pub("a", 8, 1)},
	}, func(name string) bool {
		return name == "no trim" || strings.HasPrefix(name, "refused") || strings.HasPrefix(name, "nothing")
	})

	// Canonical: a Trim that did not advance, or trims in steps, end as one.
	a := digestAfter(t, pinnedLog(), Trim{Source: "a", Through: 3})
	b := digestAfter(t, pinnedLog(), Trim{Source: "a", Through: 1}, Trim{Source: "a", Through: 3}, Trim{Source: "a", Through: 2})
	if a != b {
		t.Error("digest depends on how retention got there")
	}

	// TrimmedThrough itself is digested, not only its effect on the
	// messages and gaps: a state that differs in it alone digests apart.
	if !digestSeesEdit(t, append(pinnedLog(), Trim{Source: "a", Through: 3}), "a", func(st *sourceState) { st.TrimmedThrough = 2 }) {
		t.Error("digest blind to TrimmedThrough")
	}
}

// preTrimState is storedState as written by binaries from before Trim.
type preTrimState struct {
	HighSeq      uint64      `msgpack:"h,omitempty"`
	LowSeq       uint64      `msgpack:"l,omitempty"`
	Count        uint64      `msgpack:"n,omitempty"`
	Bytes        uint64      `msgpack:"b,omitempty"`
	Gaps         [][2]uint64 `msgpack:"g,omitempty"`
	Session      string      `msgpack:"s,omitempty"`
	Created      int64       `msgpack:"c,omitempty"`
	LastRegister int64       `msgpack:"r,omitempty"`
}

// The source state stays readable both ways without a format change: a state
// written before Trim reads as never trimmed, and a binary from before Trim
// reads a trimmed state (ignoring TrimmedThrough).
func TestSourceStateCompatibility(t *testing.T) {
	old := preTrimState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: [][2]uint64{{4, 4}, {6, 8}}, Session: "s", Created: 1, LastRegister: 2}
	b, err := msgpack.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sourceState{HighSeq: 9, LowSeq: 2, Count: 5, Bytes: 50, Gaps: []Range{{4, 4}, {6, 8}}, Session: "s", Created: 1, LastRegister: 2}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("pre-Trim state reads as %+v, want %+v", st, want)
	}
	// Never trimmed: encoded exactly as before Trim.
	if again, _ := encodeState(&st); !bytes.Equal(again, b) {
		t.Errorf("untrimmed state encodes as %x, before Trim %x", again, b)
	}

	st.TrimmedThrough = 5
	st.releaseGaps(5)
	nb, err := encodeState(&st)
	if err != nil {
		t.Fatal(err)
	}
	var seenByOld preTrimState
	if err := msgpack.Unmarshal(nb, &seenByOld); err != nil {
		t.Fatalf("a binary from before Trim cannot read a trimmed state: %v", err)
	}
	if seenByOld.HighSeq != 9 || !reflect.DeepEqual(seenByOld.Gaps, [][2]uint64{{6, 8}}) {
		t.Errorf("a binary from before Trim reads %+v", seenByOld)
	}
}
