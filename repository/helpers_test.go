package repository

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// openTest opens a fresh repository in a test directory, closed at cleanup.
func openTest(t testing.TB) *Repo {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "repo.db"))
}

// openAt opens the repository at path, closed at cleanup.
func openAt(t testing.TB, path string) *Repo {
	t.Helper()
	r, err := Open(path, Options{NoSync: true, InitialMmapSize: 16 << 20})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// rawData is a command given as bytes, for malformed or unknown entries.
type rawData []byte

// encode turns a command value (or rawData, or nil for a non-command entry)
// into entry data.
func encode(cmd any) []byte {
	switch c := cmd.(type) {
	case nil:
		return nil
	case rawData:
		return c
	case InitGroup:
		return EncodeInitGroup(c)
	case Register:
		return EncodeRegister(c)
	case Publish:
		return EncodePublish(c)
	case PeerGroup:
		return EncodePeerGroup(c)
	case Consumed:
		return EncodeConsumed(c)
	case Trim:
		return EncodeTrim(c)
	case ExpireSession:
		return EncodeExpireSession(c)
	case PublishAs:
		return EncodePublishAs(c)
	case RegisterReceiver:
		return EncodeRegisterReceiver(c)
	case ExpireReceiver:
		return EncodeExpireReceiver(c)
	case ForgetReceiver:
		return EncodeForgetReceiver(c)
	case RegisterPaced:
		return EncodeRegisterPaced(c)
	case MemberAddress:
		return EncodeMemberAddress(c)
	case Unpublished:
		return EncodeUnpublished(c)
	case ActiveLevel:
		return EncodeActiveLevel(c)
	case ForgetSource:
		return EncodeForgetSource(c)
	}
	panic(fmt.Sprintf("encode: unsupported %T", cmd))
}

// logOf numbers commands as consecutive raft entries starting at index
// first, in term 1.
func logOf(first uint64, cmds ...any) []Entry {
	entries := make([]Entry, len(cmds))
	for i, c := range cmds {
		entries[i] = Entry{Index: first + uint64(i), Term: 1, Data: encode(c)}
	}
	return entries
}

// mustApply applies entries to r, failing the test unless Apply succeeds with
// one result per entry.
func mustApply(t testing.TB, r *Repo, entries []Entry) []Result {
	t.Helper()
	res, err := r.Apply(entries)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res) != len(entries) {
		t.Fatalf("Apply returned %d results for %d entries", len(res), len(entries))
	}
	return res
}

// mustDigest returns r's digest, failing the test on an error.
func mustDigest(t testing.TB, r *Repo) string {
	t.Helper()
	d, err := r.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// payloads returns n distinct payloads for messages first..first+n-1.
func payloads(tag string, first uint64, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("%s-%d", tag, first+uint64(i)))
	}
	return out
}

// openApplied opens a fresh repository and applies cmds to it as one batch of
// entries numbered from 1.
func openApplied(t testing.TB, cmds ...any) *Repo {
	t.Helper()
	r := openTest(t)
	mustApply(t, r, logOf(1, cmds...))
	return r
}

// reopen closes r and opens its file again, failing the test if the digest
// changed across the reopen.
func reopen(t *testing.T, r *Repo) *Repo {
	t.Helper()
	want := mustDigest(t, r)
	path := r.Path()
	r.Close()
	again := openAt(t, path)
	if mustDigest(t, again) != want {
		t.Error("digest changed across reopen")
	}
	return again
}

// applyChecked opens a fresh repository, applies cmds to it as one batch of
// entries numbered from 1, and checks the results against wants and that
// every entry, refused ones included, counts as applied.
func applyChecked(t *testing.T, cmds []any, wants []want) *Repo {
	t.Helper()
	r := openTest(t)
	entries := logOf(1, cmds...)
	checkResults(t, mustApply(t, r, entries), wants)
	if got, want := r.AppliedIndex(), uint64(len(entries)); got != want {
		t.Errorf("AppliedIndex = %d, want %d (refused entries count as applied)", got, want)
	}
	return r
}

// applyBatchedBothWays does what applyChecked does, and applies the same
// entries to a second fresh repository one entry per batch: the results and
// the digest must not depend on how the log is cut into batches. It returns
// the repository that took the log in one batch.
func applyBatchedBothWays(t *testing.T, cmds []any, wants []want) *Repo {
	t.Helper()
	whole := applyChecked(t, cmds, wants)
	single := openTest(t)
	log := logOf(1, cmds...)
	var got []Result
	for i := range log {
		got = append(got, mustApply(t, single, log[i:i+1])...)
	}
	checkResults(t, got, wants)
	if mustDigest(t, whole) != mustDigest(t, single) {
		t.Error("digest depends on how the log is cut into batches")
	}
	return whole
}

// checkAllSkipped checks that every result reports only Skipped, as it must
// for an entry the repository had applied already.
func checkAllSkipped(t *testing.T, res []Result) {
	t.Helper()
	wants := make([]want, len(res))
	for i := range wants {
		wants[i].Skipped = true
	}
	checkResults(t, res, wants)
}

// checkRefusalsSay checks that the entry at each position in says was refused
// with an error whose text contains says[position].
func checkRefusalsSay(t *testing.T, res []Result, says map[int]string) {
	t.Helper()
	for i, text := range says {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), text) {
			t.Errorf("entry %d: Err = %v, want it to say %q", res[i].Index, res[i].Err, text)
		}
	}
}

// heldSeqs returns the sequence numbers Read finds of source.
func heldSeqs(t *testing.T, r *Repo, source string) []uint64 {
	t.Helper()
	msgs, err := r.Read(source, 0, ^uint64(0), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

// sourceCase is a log applied to fresh repositories and what it must leave
// behind: each entry's result, the sources and the messages each holds.
type sourceCase struct {
	name    string
	cmds    []any
	wants   []want
	sources []SourceInfo        // Sources() afterwards
	held    map[string][]uint64 // what Read finds afterwards, per source
}

// runSourceCases runs each case as a subtest: its log applied as
// applyBatchedBothWays does, then Sources and what Read finds of each source
// compared with the case's.
func runSourceCases(t *testing.T, cases []sourceCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := applyBatchedBothWays(t, tt.cmds, tt.wants)
			sources, err := r.Sources()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sources, tt.sources) {
				t.Errorf("Sources =\n  %+v\nwant\n  %+v", sources, tt.sources)
			}
			for _, s := range sources {
				if got, want := heldSeqs(t, r, s.Name), tt.held[s.Name]; !reflect.DeepEqual(got, want) {
					t.Errorf("Read(%q) finds %v, want %v", s.Name, got, want)
				}
			}
		})
	}
}

// readCase is one Read call and the sequence numbers it must return.
type readCase struct {
	name               string
	from, to           uint64
	maxCount, maxBytes int
	want               []uint64
}

// runReadCases runs each case as a subtest reading source from r: the
// sequence numbers must be the case's, and each message must carry
// payloadLen(seq) bytes.
func runReadCases(t *testing.T, r *Repo, source string, cases []readCase, payloadLen func(seq uint64) int) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := r.Read(source, tt.from, tt.to, tt.maxCount, tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, m := range msgs {
				got = append(got, m.Seq)
				if want := payloadLen(m.Seq); len(m.Payload) != want {
					t.Errorf("seq %d: %d bytes, want %d", m.Seq, len(m.Payload), want)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Read(%d, %d, %d, %d) = %v, want %v", tt.from, tt.to, tt.maxCount, tt.maxBytes, got, tt.want)
			}
		})
	}
}

// snapshotBytes writes a snapshot of r out in full and returns the stream.
func snapshotBytes(t testing.TB, r *Repo) []byte {
	t.Helper()
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restoredCopies snapshots src and restores the snapshot into an empty
// repository and into a member of the same group that first applied
// memberCmds, checking that each then has src's digest. It returns the two,
// named "empty" and "member", for the checks particular to a test.
func restoredCopies(t *testing.T, src *Repo, memberCmds ...any) map[string]*Repo {
	t.Helper()
	snap := snapshotBytes(t, src)
	want := mustDigest(t, src)
	copies := map[string]*Repo{"empty": openTest(t), "member": openApplied(t, memberCmds...)}
	for name, r := range copies {
		if err := r.Restore(bytes.NewReader(snap)); err != nil {
			t.Fatalf("%s: Restore: %v", name, err)
		}
		if mustDigest(t, r) != want {
			t.Errorf("%s: restored digest differs", name)
		}
	}
	return copies
}

// pinnedDigest is the digest of pinnedLog as computed before receiver
// positions existed: a repository without receiver positions, trims or
// session expiries must keep it.
const pinnedDigest = "22a1e858a0aa400eca0fe53d34793d5330b6748f9ebe927652b47f87b9d73204"

// pinnedLog is the log behind pinnedDigest: source a registered by session
// "s" at 200, holding 1..3 and 6..7 (gap [4,5]); source b registered without
// a session at 300, holding nothing; a peer group record.
func pinnedLog() []any {
	return []any{
		InitGroup{GroupID: "g-1", Index: 1, UnixNano: 100},
		Register{Source: "a", Session: "s", UnixNano: 200},
		pub("a", 1, 3),
		pub("a", 6, 2),
		Register{Source: "b", UnixNano: 300},
		PeerGroup{Index: 2, GroupID: "g-2", UnixNano: 400},
	}
}

// digestAfter returns the digest of a fresh repository that applied base and
// then extra, as entries numbered from 1.
func digestAfter(t *testing.T, base []any, extra ...any) string {
	t.Helper()
	return mustDigest(t, openApplied(t, slices.Concat(base, extra)...))
}

// checkDigestVariants applies base and then each variant's commands to a
// fresh repository. A variant for which unchanged(name) holds must leave the
// digest at base's; every other must change it, to a digest no other variant
// reaches. without names what base lacks, for the messages.
func checkDigestVariants(t *testing.T, base []any, without string, variants map[string][]any, unchanged func(name string) bool) {
	t.Helper()
	baseDigest := digestAfter(t, base)
	seen := map[string]string{}
	for name, extra := range variants {
		d := digestAfter(t, base, extra...)
		if unchanged(name) {
			if d != baseDigest {
				t.Errorf("%s: digest differs from the repository without %s", name, without)
			}
			continue
		}
		if other, dup := seen[d]; dup {
			t.Errorf("digest blind to the difference between %q and %q", name, other)
		}
		seen[d] = name
		if d == baseDigest {
			t.Errorf("digest blind to %s", name)
		}
	}
}

// digestSeesEdit reports whether the digest of a fresh repository that
// applied cmds changes when source's stored state is rewritten with change
// applied, behind the state machine's back.
func digestSeesEdit(t *testing.T, cmds []any, source string, change func(*sourceState)) bool {
	t.Helper()
	r := openApplied(t, cmds...)
	before := mustDigest(t, r)
	if err := r.db.Update(func(tx *bolt.Tx) error {
		st, err := loadState(tx, source)
		if err != nil {
			return err
		}
		change(&st)
		v, err := encodeState(&st)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketSources).Bucket([]byte(source)).Put(keyState, v)
	}); err != nil {
		t.Fatal(err)
	}
	return mustDigest(t, r) != before
}
