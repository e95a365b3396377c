package repository

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// highest returns what reads see of source: its highest sequence number, 0
// when reads do not know it.
func highest(t *testing.T, r *Repo, source string) uint64 {
	t.Helper()
	info, ok, err := r.Source(source)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	return info.HighSeq
}

// A deferred batch is decided at once but seen by reads, and counted in
// AppliedIndex, only once committed; later batches go into the same
// transaction and see the earlier ones.
func TestDeferredBatchesAreReadOnlyOnceCommitted(t *testing.T) {
	r := openApplied(t, InitGroup{GroupID: "g", Index: 1}, Register{Source: "a", Session: "s"})
	committed := r.AppliedIndex()
	log := logOf(committed+1, pub("a", 1, 3), pub("a", 4, 2), pub("a", 3, 1))

	var decided []Result
	res, err := r.ApplyDeferred(log[:1], func(rs []Result) { decided = append(decided, rs...) })
	if err != nil {
		t.Fatal(err)
	}
	if len(decided) != 1 || decided[0].Publish == nil || decided[0].Publish.Stored != 3 {
		t.Fatalf("decided %+v, want the publish of 3 stored", decided)
	}
	if res[0].Publish.Stored != 3 {
		t.Fatalf("result %+v", res[0].Publish)
	}
	res, err = r.ApplyDeferred(log[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	// The second batch saw the first: 4..5 continue it, 3 is a duplicate.
	if res[0].Publish.HighSeq != 5 || res[1].Publish.Duplicates != 1 {
		t.Fatalf("second batch %+v, %+v: it did not see the first", res[0].Publish, res[1].Publish)
	}
	if n, since := r.Pending(); n != 3 || since.IsZero() {
		t.Fatalf("Pending() = %d, %v; want 3 entries", n, since)
	}
	if got := highest(t, r, "a"); got != 0 {
		t.Fatalf("reads see highest %d before the commit, want nothing", got)
	}
	if r.AppliedIndex() != committed {
		t.Fatalf("AppliedIndex %d before the commit, want %d", r.AppliedIndex(), committed)
	}

	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := highest(t, r, "a"); got != 5 {
		t.Fatalf("reads see highest %d after the commit, want 5", got)
	}
	if want := log[2].Index; r.AppliedIndex() != want {
		t.Fatalf("AppliedIndex %d after the commit, want %d", r.AppliedIndex(), want)
	}
	if n, _ := r.Pending(); n != 0 {
		t.Fatalf("Pending() = %d after the commit", n)
	}
	msgs, err := r.Read("a", 1, 5, 10, 1<<20)
	if err != nil || len(msgs) != 5 || !bytes.Equal(msgs[4].Payload, pub("a", 4, 2).Payloads[1]) {
		t.Fatalf("Read after the commit: %d messages, %v", len(msgs), err)
	}
}

// ApplyDecided commits what ApplyDeferred left open together with its own
// batch; Close commits it too, so a reopened file holds it.
func TestApplyDecidedAndCloseCommitDeferredBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.db")
	r := openAt(t, path)
	mustApply(t, r, logOf(1, InitGroup{GroupID: "g", Index: 1}, Register{Source: "a", Session: "s"}))
	if _, err := r.ApplyDeferred(logOf(3, pub("a", 1, 2)), nil); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, logOf(4, Register{Source: "b", Session: "t"}))
	if got := highest(t, r, "a"); got != 2 || r.AppliedIndex() != 4 {
		t.Fatalf("after ApplyDecided: highest %d, applied %d; want 2 and 4", got, r.AppliedIndex())
	}
	if _, err := r.ApplyDeferred(logOf(5, pub("a", 3, 2)), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	again := openAt(t, path)
	if got := highest(t, again, "a"); got != 4 || again.AppliedIndex() != 5 {
		t.Fatalf("reopened: highest %d, applied %d; want 4 and 5", got, again.AppliedIndex())
	}
}

// A batch that cannot be applied rolls back every deferred batch before
// it: the store stops, and raft's replay brings them back.
func TestFailedBatchDropsTheDeferredOnes(t *testing.T) {
	r := openApplied(t, InitGroup{GroupID: "g", Index: 1}, Register{Source: "a", Session: "s"})
	committed := r.AppliedIndex()
	if _, err := r.ApplyDeferred(logOf(committed+1, pub("a", 1, 2)), nil); err != nil {
		t.Fatal(err)
	}
	bad := logOf(committed+2, rawData{0x7f, 1, 2, 3}) // a command type no version knows
	if _, err := r.ApplyDeferred(bad, nil); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("unknown command: %v, want ErrUnknownCommand", err)
	}
	if n, _ := r.Pending(); n != 0 {
		t.Fatalf("Pending() = %d after the failed batch, want 0", n)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := highest(t, r, "a"); got != 0 || r.AppliedIndex() != committed {
		t.Fatalf("after the failure: highest %d, applied %d; want 0 and %d (replayed later)", got, r.AppliedIndex(), committed)
	}
	res := mustApply(t, r, logOf(committed+1, pub("a", 1, 2)))
	if res[0].Skipped || res[0].Publish.Stored != 2 {
		t.Fatalf("replay %+v, want the publish applied again", res[0])
	}
}

// Only publishes may wait for a later commit.
func TestDeferrable(t *testing.T) {
	tests := []struct {
		name string
		cmd  any
		want bool
	}{
		{"publish", pub("a", 1, 1), true},
		{"publish as a session", PublishAs{Session: "s", Publish: pub("a", 1, 1)}, true},
		{"not a command", nil, true},
		{"register", Register{Source: "a", Session: "s"}, false},
		{"consumed", Consumed{Source: "a", Receiver: "r", Seq: 1}, false},
		{"trim", Trim{Source: "a", Through: 1}, false},
		{"init group", InitGroup{GroupID: "g", Index: 1}, false},
		{"expire session", ExpireSession{Source: "a", Session: "s"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Deferrable(encode(tt.cmd)); got != tt.want {
				t.Errorf("Deferrable = %v, want %v", got, tt.want)
			}
		})
	}
}
