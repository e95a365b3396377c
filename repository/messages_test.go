package repository

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// storedRun is one run as the file holds it.
type storedRun struct {
	first    uint64
	payloads [][]byte
}

// runsOf returns the runs of source as stored, after checking the layout's
// invariants against its bookkeeping: runs ascend without overlapping, each
// holds at least one message, and together they hold exactly the messages
// the bookkeeping says are held (Count, Bytes, LowSeq, and (TrimmedThrough,
// HighSeq] minus Gaps).
func runsOf(t *testing.T, r *Repo, source string) []storedRun {
	t.Helper()
	var runs []storedRun
	err := r.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSources).Bucket([]byte(source)).Bucket(bucketMsgs).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			payloads, err := decodeRun(v)
			if err != nil {
				return err
			}
			for i, p := range payloads {
				payloads[i] = bytes.Clone(p)
			}
			runs = append(runs, storedRun{first: binary.BigEndian.Uint64(k), payloads: payloads})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("runs of %q: %v", source, err)
	}
	info, _, err := r.Source(source)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	size := uint64(0)
	for i, run := range runs {
		if len(run.payloads) == 0 {
			t.Fatalf("run at %d is empty", run.first)
		}
		if i > 0 && seqs[len(seqs)-1] >= run.first {
			t.Fatalf("run at %d overlaps the one before, ending at %d", run.first, seqs[len(seqs)-1])
		}
		for j, p := range run.payloads {
			seqs = append(seqs, run.first+uint64(j))
			size += uint64(len(p))
		}
	}
	var held []uint64
	for seq := info.TrimmedThrough + 1; seq <= info.HighSeq; seq++ {
		inGap := false
		for _, g := range info.Gaps {
			inGap = inGap || (g.From <= seq && seq <= g.To)
		}
		if !inGap {
			held = append(held, seq)
		}
	}
	if !slices.Equal(seqs, held) {
		t.Fatalf("runs hold %v, the bookkeeping %v", seqs, held)
	}
	low := uint64(0)
	if len(seqs) > 0 {
		low = seqs[0]
	}
	if uint64(len(seqs)) != info.Count || size != info.Bytes || low != info.LowSeq {
		t.Fatalf("runs hold %d messages of %d bytes from %d; the bookkeeping says %d of %d from %d", len(seqs), size, low, info.Count, info.Bytes, info.LowSeq)
	}
	return runs
}

// spans writes the runs of source as "first-last" (or "first" for one
// message), separated by spaces.
func spans(t *testing.T, r *Repo, source string) string {
	t.Helper()
	var out []string
	for _, run := range runsOf(t, r, source) {
		if len(run.payloads) == 1 {
			out = append(out, fmt.Sprint(run.first))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", run.first, run.first+uint64(len(run.payloads))-1))
		}
	}
	return strings.Join(out, " ")
}

// readModel is Read's contract over a full, ascending list of messages.
func readModel(all []Message, from, to uint64, maxCount, maxBytes int) []Message {
	var out []Message
	total := 0
	for _, m := range all {
		switch {
		case m.Seq < from:
			continue
		case m.Seq > to, maxCount > 0 && len(out) >= maxCount, maxBytes > 0 && len(out) > 0 && total+len(m.Payload) > maxBytes:
			return out
		}
		total += len(m.Payload)
		out = append(out, m)
	}
	return out
}

// checkReads compares Read of source with readModel over what it holds, for
// every range with bounds in [0, high+2] and a few limits.
func checkReads(t *testing.T, r *Repo, source string, high uint64) {
	t.Helper()
	all, err := r.Read(source, 0, ^uint64(0), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for from := uint64(0); from <= high+2; from++ {
		for to := from; to <= high+2; to++ {
			for _, maxCount := range []int{0, 1, 2, 5} {
				for _, maxBytes := range []int{0, 1, 4, 9} {
					got, err := r.Read(source, from, to, maxCount, maxBytes)
					if err != nil {
						t.Fatal(err)
					}
					if want := readModel(all, from, to, maxCount, maxBytes); !reflect.DeepEqual(got, want) {
						t.Fatalf("Read(%d, %d, %d, %d) = %v, want %v", from, to, maxCount, maxBytes, got, want)
					}
				}
			}
		}
	}
}

func TestPublishStoresRuns(t *testing.T) {
	x := func(first uint64, n int) Publish {
		return Publish{Source: "a", FirstSeq: first, Payloads: payloads("x", first, n)}
	}
	tests := []struct {
		name string
		cmds []any
		last PublishResult // of the last Publish
		runs string
	}{
		{
			name: "one publish, one run",
			cmds: []any{pub("a", 1, 5)},
			last: PublishResult{Source: "a", FirstSeq: 1, LastSeq: 5, Stored: 5, HighSeq: 5},
			runs: "1-5",
		},
		{
			name: "duplicates in the middle cut the run",
			cmds: []any{pub("a", 3, 2), pub("a", 7, 1), x(1, 9)},
			last: PublishResult{Source: "a", FirstSeq: 1, LastSeq: 9, Stored: 6, Duplicates: 3, HighSeq: 9, Conflicts: 3, FirstConflict: 3},
			runs: "1-2 3-4 5-6 7 8-9",
		},
		{
			name: "gap fills",
			cmds: []any{pub("a", 1, 2), pub("a", 6, 2), pub("a", 4, 1), x(1, 8)},
			last: PublishResult{Source: "a", FirstSeq: 1, LastSeq: 8, Stored: 3, Duplicates: 5, HighSeq: 8, Conflicts: 5, FirstConflict: 1},
			runs: "1-2 3 4 5 6-7 8",
		},
		{
			name: "below retention, a straddling run trimmed",
			cmds: []any{pub("a", 1, 4), Trim{Source: "a", Through: 3}, x(1, 6)},
			last: PublishResult{Source: "a", FirstSeq: 1, LastSeq: 6, Stored: 2, Duplicates: 1, HighSeq: 6, Conflicts: 1, FirstConflict: 4, BelowRetention: 3},
			runs: "4 5-6",
		},
		{
			name: "below retention, then a gap fill between runs",
			cmds: []any{pub("a", 1, 2), pub("a", 5, 2), Trim{Source: "a", Through: 1}, pub("a", 1, 6)},
			last: PublishResult{Source: "a", FirstSeq: 1, LastSeq: 6, Stored: 2, Duplicates: 3, HighSeq: 6, BelowRetention: 1},
			runs: "2 3-4 5-6",
		},
		{
			name: "a new gap, then the run",
			cmds: []any{pub("a", 1, 2), x(5, 3)},
			last: PublishResult{Source: "a", FirstSeq: 5, LastSeq: 7, Stored: 3, HighSeq: 7, NewGap: &Range{3, 4}},
			runs: "1-2 5-7",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, tt.cmds...))
			if got := res[len(res)-1].Publish; got == nil || !reflect.DeepEqual(*got, tt.last) {
				t.Errorf("last Publish = %+v (%v), want %+v", got, res[len(res)-1].Err, tt.last)
			}
			if got := spans(t, r, "a"); got != tt.runs {
				t.Errorf("runs %q, want %q", got, tt.runs)
			}
			checkReads(t, r, "a", tt.last.HighSeq)
		})
	}
}

// The first payload stored for a sequence number wins, wherever in a run it
// sits; a duplicate is compared with it.
func TestPublishConflictsInsideRuns(t *testing.T) {
	// Runs 1-10 and 14-18 of "a-<seq>"; 11..13 missing.
	setup := []any{pub("a", 1, 10), pub("a", 14, 5)}
	with := func(first uint64, n int, differ ...uint64) Publish {
		c := pub("a", first, n)
		for _, seq := range differ {
			c.Payloads[seq-first] = []byte("other")
		}
		return c
	}
	tests := []struct {
		name string
		cmd  Publish
		want PublishResult
		runs string
	}{
		{"same payloads", with(4, 3), PublishResult{Duplicates: 3, HighSeq: 18}, "1-10 14-18"},
		{"one different in the middle", with(5, 1, 5), PublishResult{Duplicates: 1, Conflicts: 1, FirstConflict: 5, HighSeq: 18}, "1-10 14-18"},
		{"the middle of three", with(4, 3, 5), PublishResult{Duplicates: 3, Conflicts: 1, FirstConflict: 5, HighSeq: 18}, "1-10 14-18"},
		{"first and last of a run", with(1, 10, 1, 10), PublishResult{Duplicates: 10, Conflicts: 2, FirstConflict: 1, HighSeq: 18}, "1-10 14-18"},
		{"across a fill", with(9, 10, 9, 14, 17), PublishResult{Stored: 3, Duplicates: 7, Conflicts: 3, FirstConflict: 9, HighSeq: 18}, "1-10 11-13 14-18"},
		{"then new messages", with(17, 4, 18), PublishResult{Stored: 2, Duplicates: 2, Conflicts: 1, FirstConflict: 18, HighSeq: 20}, "1-10 14-18 19-20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openTest(t)
			mustApply(t, r, logOf(1, setup...))
			before, _ := r.Read("a", 0, 18, 0, 0)
			res := mustApply(t, r, logOf(3, tt.cmd))
			tt.want.Source, tt.want.FirstSeq, tt.want.LastSeq = "a", tt.cmd.FirstSeq, tt.cmd.FirstSeq+uint64(len(tt.cmd.Payloads))-1
			if got := res[0].Publish; got == nil || !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Publish = %+v (%v), want %+v", got, res[0].Err, tt.want)
			}
			if got := spans(t, r, "a"); got != tt.runs {
				t.Errorf("runs %q, want %q", got, tt.runs)
			}
			after, _ := r.Read("a", 0, 18, 0, 0)
			for _, m := range after {
				if i := slices.IndexFunc(before, func(b Message) bool { return b.Seq == m.Seq }); i >= 0 && !bytes.Equal(before[i].Payload, m.Payload) {
					t.Errorf("message %d overwritten: %q, was %q", m.Seq, m.Payload, before[i].Payload)
				}
			}
		})
	}
}

func TestTrimRuns(t *testing.T) {
	// Source a: runs 1-5, 6-10, 11-15, message seq of seq bytes. Source g:
	// runs 1-3 and 7-9, gap [4,6].
	setup := []any{
		sizedBySeq("a", 1, 5), sizedBySeq("a", 6, 5), sizedBySeq("a", 11, 5),
		sizedBySeq("g", 1, 3), sizedBySeq("g", 7, 3),
	}
	bytesOf := func(first, last uint64) uint64 { return (first + last) * (last - first + 1) / 2 }
	tests := []struct {
		name    string
		source  string
		through []uint64 // one Trim each, in order
		want    TrimResult
		runs    string
	}{
		{"inside the first run", "a", []uint64{3}, TrimResult{Through: 3, Dropped: 3, DroppedBytes: bytesOf(1, 3), LowSeq: 4}, "4-5 6-10 11-15"},
		{"a whole run, at its end", "a", []uint64{5}, TrimResult{Through: 5, Dropped: 5, DroppedBytes: bytesOf(1, 5), LowSeq: 6}, "6-10 11-15"},
		{"at a run's first message", "a", []uint64{6}, TrimResult{Through: 6, Dropped: 6, DroppedBytes: bytesOf(1, 6), LowSeq: 7}, "7-10 11-15"},
		{"runs and a part", "a", []uint64{12}, TrimResult{Through: 12, Dropped: 12, DroppedBytes: bytesOf(1, 12), LowSeq: 13}, "13-15"},
		{"everything", "a", []uint64{15}, TrimResult{Through: 15, Dropped: 15, DroppedBytes: bytesOf(1, 15)}, ""},
		{"past everything", "a", []uint64{100}, TrimResult{Through: 15, Dropped: 15, DroppedBytes: bytesOf(1, 15)}, ""},
		{"twice inside one run", "a", []uint64{2, 4}, TrimResult{Through: 4, Dropped: 2, DroppedBytes: bytesOf(3, 4), LowSeq: 5}, "5 6-10 11-15"},
		{"to the last of a trimmed run", "a", []uint64{2, 5}, TrimResult{Through: 5, Dropped: 3, DroppedBytes: bytesOf(3, 5), LowSeq: 6}, "6-10 11-15"},
		{"into a gap", "g", []uint64{5}, TrimResult{Through: 5, Dropped: 3, DroppedBytes: bytesOf(1, 3), LowSeq: 7}, "7-9"},
		{"across a gap into a run", "g", []uint64{8}, TrimResult{Through: 8, Dropped: 5, DroppedBytes: bytesOf(1, 3) + bytesOf(7, 8), LowSeq: 9}, "9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openTest(t)
			cmds := slices.Clone(setup)
			for _, through := range tt.through {
				cmds = append(cmds, Trim{Source: tt.source, Through: through})
			}
			res := mustApply(t, r, logOf(1, cmds...))
			tt.want.Source, tt.want.Advanced = tt.source, true
			if got := res[len(res)-1].Trim; got == nil || !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("last Trim = %+v (%v), want %+v", got, res[len(res)-1].Err, tt.want)
			}
			if got := spans(t, r, tt.source); got != tt.runs {
				t.Errorf("runs %q, want %q", got, tt.runs)
			}
			held, _ := r.Read(tt.source, 0, ^uint64(0), 0, 0)
			for _, m := range held {
				if len(m.Payload) != int(m.Seq) || m.Seq <= tt.want.Through {
					t.Errorf("Read finds message %d of %d bytes", m.Seq, len(m.Payload))
				}
			}
			checkReads(t, r, tt.source, 15)
		})
	}
}

// sizedBySeq publishes n messages from first, each of as many bytes as its
// sequence number.
func sizedBySeq(src string, first uint64, n int) Publish {
	c := Publish{Source: src, FirstSeq: first, Payloads: make([][]byte, n)}
	for i := range c.Payloads {
		c.Payloads[i] = bytes.Repeat([]byte{byte(i)}, int(first)+i)
	}
	return c
}

// RetentionPlan walks messages across runs, from inside one left by a trim,
// exactly as it walked messages one key each.
func TestRetentionPlanAcrossRuns(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1,
		sizedBySeq("a", 1, 4), sizedBySeq("a", 5, 1), sizedBySeq("a", 8, 6), sizedBySeq("a", 6, 5), // 6-7 fill the gap, 8-10 duplicates
		Trim{Source: "a", Through: 2}))
	if got := spans(t, r, "a"); got != "3-4 5 6-7 8-13" {
		t.Fatalf("runs %q", got)
	}
	held, _ := r.Read("a", 0, ^uint64(0), 0, 0)
	info, _, _ := r.Source("a")
	// The reference: drop from the oldest while over a limit.
	plan := func(maxBytes, maxMessages uint64) (uint64, string) {
		count, size := info.Count, info.Bytes
		through, reason := uint64(0), ""
		for _, m := range held {
			why := ""
			switch {
			case maxBytes > 0 && size > maxBytes:
				why = RetentionBytes
			case maxMessages > 0 && count > maxMessages:
				why = RetentionMessages
			}
			if why == "" {
				break
			}
			through, reason = m.Seq, why
			count--
			size -= uint64(len(m.Payload))
		}
		return through, reason
	}
	for maxBytes := uint64(0); maxBytes <= info.Bytes+1; maxBytes += 3 {
		for maxMessages := uint64(0); maxMessages <= info.Count+1; maxMessages++ {
			through, reason, err := r.RetentionPlan("a", maxBytes, maxMessages)
			if err != nil {
				t.Fatal(err)
			}
			if wt, wr := plan(maxBytes, maxMessages); through != wt || reason != wr {
				t.Errorf("RetentionPlan(a, %d, %d) = %d, %q; want %d, %q", maxBytes, maxMessages, through, reason, wt, wr)
			}
		}
	}
}

func TestReadInsideRun(t *testing.T) {
	r := openTest(t)
	mustApply(t, r, logOf(1, sizedBySeq("a", 1, 20), sizedBySeq("a", 25, 3)))
	runReadCases(t, r, "a", []readCase{
		{"from the middle", 7, 10, 0, 0, seqRange(7, 10)},
		{"from the last of a run", 20, 30, 0, 0, []uint64{20, 25, 26, 27}},
		{"from a gap", 21, 30, 0, 0, seqRange(25, 27)},
		{"from the middle, count", 7, 20, 3, 0, seqRange(7, 9)},
		{"from the middle, bytes", 7, 20, 0, 7 + 8 + 9, seqRange(7, 9)},
		{"from the middle, bytes short by one", 7, 20, 0, 7 + 8 + 9 - 1, seqRange(7, 8)},
		{"from the middle, first message too big", 7, 20, 0, 1, []uint64{7}},
		{"into the next run, bytes", 19, 30, 0, 19 + 20 + 25, []uint64{19, 20, 25}},
		{"past the end", 28, 40, 0, 0, nil},
	}, func(seq uint64) int { return int(seq) })
	checkReads(t, r, "a", 27)
}

// How messages are cut into runs shows in no result: the same messages
// published in one Publish, one by one, in reverse, or in overlapping
// resends read and digest the same.
func TestRunsInvisible(t *testing.T) {
	const n = 60
	all := payloads("m", 1, n)
	one := func(seq uint64) Publish { return Publish{Source: "a", FirstSeq: seq, Payloads: all[seq-1 : seq]} }
	logs := map[string][]any{"one publish": {Publish{Source: "a", FirstSeq: 1, Payloads: all}}}
	for seq := uint64(1); seq <= n; seq++ {
		logs["one by one"] = append(logs["one by one"], one(seq))
		logs["in reverse"] = append(logs["in reverse"], one(n+1-seq))
	}
	for first := uint64(1); first <= n; first += 5 {
		last := min(n, first+11)
		logs["overlapping resends"] = append(logs["overlapping resends"], Publish{Source: "a", FirstSeq: first, Payloads: all[first-1 : last]})
	}
	for _, odd := range []bool{true, false} { // odd ones first, then even: every run of one
		for seq := uint64(1); seq <= n; seq++ {
			if (seq%2 == 1) == odd {
				logs["odd then even"] = append(logs["odd then even"], one(seq))
			}
		}
	}
	type outcome struct {
		digest string
		msgs   []Message
		info   []SourceInfo
	}
	var ref *outcome
	var refName string
	for name, cmds := range logs {
		r := openTest(t)
		mustApply(t, r, logOf(1, cmds...))
		msgs, err := r.Read("a", 0, ^uint64(0), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		info, err := r.Sources()
		if err != nil {
			t.Fatal(err)
		}
		got := &outcome{mustDigest(t, r), msgs, info}
		runsOf(t, r, "a")
		if ref == nil {
			ref, refName = got, name
			continue
		}
		if got.digest != ref.digest {
			t.Errorf("%s digests %s, %s %s", name, got.digest, refName, ref.digest)
		}
		if !reflect.DeepEqual(got.msgs, ref.msgs) || !reflect.DeepEqual(got.info, ref.info) {
			t.Errorf("%s reads differently from %s", name, refName)
		}
		for from := uint64(0); from <= n+1; from += 7 {
			a, _ := r.Read("a", from, from+9, 4, 20)
			if b := readModel(ref.msgs, from, from+9, 4, 20); !reflect.DeepEqual(a, b) {
				t.Errorf("%s: Read(%d, %d, 4, 20) = %v, want %v", name, from, from+9, a, b)
			}
		}
	}
}

// A Publish whose messages would make a run larger than maxRunSize is cut
// into several runs; a message larger than that is a run of its own.
func TestPublishCutsLargeRuns(t *testing.T) {
	quarter := maxRunSize / 4 // four take a little more than maxRunSize
	big := func(size int, fill byte) []byte { return bytes.Repeat([]byte{fill}, size) }
	tests := []struct {
		name     string
		payloads [][]byte
		runs     string
	}{
		{"three per run", [][]byte{big(quarter, 1), big(quarter, 2), big(quarter, 3), big(quarter, 4), big(quarter, 5), big(quarter, 6), big(quarter, 7)}, "1-3 4-6 7"},
		{"a message above the limit alone", [][]byte{[]byte("a"), big(maxRunSize+1, 2), []byte("c"), []byte("d")}, "1 2 3-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, Publish{Source: "a", FirstSeq: 1, Payloads: tt.payloads}))
			if res[0].Publish == nil || res[0].Publish.Stored != len(tt.payloads) {
				t.Fatalf("Publish = %+v, %v", res[0].Publish, res[0].Err)
			}
			if got := spans(t, r, "a"); got != tt.runs {
				t.Errorf("runs %q, want %q", got, tt.runs)
			}
			for _, run := range runsOf(t, r, "a") {
				if size := runSize(run.payloads); len(run.payloads) > 1 && size > maxRunSize {
					t.Errorf("run at %d takes %d bytes", run.first, size)
				}
			}
			msgs, err := r.Read("a", 0, ^uint64(0), 0, 0)
			if err != nil || len(msgs) != len(tt.payloads) {
				t.Fatalf("Read: %d messages, %v", len(msgs), err)
			}
			for i, m := range msgs {
				if !bytes.Equal(m.Payload, tt.payloads[i]) {
					t.Errorf("message %d differs", m.Seq)
				}
			}
		})
	}
}

// A random mix of publishes (in order, resends, gaps, fills) and trims keeps
// the runs consistent with the bookkeeping and reads as a plain map of
// messages would.
func TestRunsRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	r := openTest(t)
	held := map[uint64][]byte{}
	high, trimmed := uint64(0), uint64(0)
	index := uint64(0)
	for step := 0; step < 400; step++ {
		var cmd any
		if step > 0 && rng.IntN(10) == 0 { // the source exists by then
			through := 1 + uint64(rng.IntN(int(high)+3))
			cmd = Trim{Source: "a", Through: through}
			for seq := range held {
				if seq <= min(through, high) {
					delete(held, seq)
				}
			}
			trimmed = max(trimmed, min(through, high))
		} else {
			first := 1 + uint64(rng.IntN(int(high)+4))
			c := Publish{Source: "a", FirstSeq: first, Payloads: make([][]byte, 1+rng.IntN(12))}
			for i := range c.Payloads {
				seq := first + uint64(i)
				c.Payloads[i] = []byte(fmt.Sprintf("%d/%d", seq, step))
				if _, ok := held[seq]; !ok && seq > trimmed {
					held[seq] = c.Payloads[i]
				}
				high = max(high, seq)
			}
			cmd = c
		}
		index++
		if res := mustApply(t, r, logOf(index, cmd)); res[0].Err != nil {
			t.Fatalf("step %d: %v", step, res[0].Err)
		}
		runsOf(t, r, "a")
		want := make([]Message, 0, len(held))
		for seq, p := range held {
			want = append(want, Message{Seq: seq, Payload: p, CRC: Checksum(p)})
		}
		slices.SortFunc(want, func(a, b Message) int { return int(a.Seq) - int(b.Seq) })
		from, to := uint64(rng.IntN(int(high)+2)), uint64(rng.IntN(int(high)+2))
		maxCount, maxBytes := rng.IntN(6), rng.IntN(40)
		got, err := r.Read("a", from, to, maxCount, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if w := readModel(want, from, to, maxCount, maxBytes); !reflect.DeepEqual(got, w) {
			t.Fatalf("step %d: Read(%d, %d, %d, %d) = %v, want %v", step, from, to, maxCount, maxBytes, got, w)
		}
	}
}
