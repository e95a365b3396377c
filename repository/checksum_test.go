package repository

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A bit flipped at rest in each kind of stored payload is found by Read,
// which returns the messages before it and a *CorruptError naming it,
// never the damaged payload, and counts it: an inline run in repo.db, and
// the raft log entry a log run refers to (or that entry gone).
func TestReadNeverServesADamagedPayload(t *testing.T) {
	log := logOf(1, Register{Source: "a", Session: "s"}, pub("a", 1, 10), pub("a", 11, 10))
	flipInline := func(t *testing.T, r *Repo, _ memLog) {
		err := r.db.Update(func(tx *bolt.Tx) error {
			msgs := tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs)
			v := bytes.Clone(msgs.Get(u64(11)))
			v[len(v)-3] ^= 0x10 // inside message 20's payload, the last of the run
			return msgs.Put(u64(11), v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	flipEntry := func(t *testing.T, _ *Repo, m memLog) {
		d := bytes.Clone(m[3])
		d[len(d)-3] ^= 0x10
		m[3] = d
	}
	dropEntry := func(t *testing.T, _ *Repo, m memLog) { delete(m, 3) }
	tests := []struct {
		name     string
		indexing bool
		damage   func(t *testing.T, r *Repo, m memLog)
		first    uint64 // the first message found damaged
	}{
		{"repo.db inline run", false, flipInline, 20},
		{"raft log entry of a log run", true, flipEntry, 20},
		{"raft log entry missing", true, dropEntry, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := logOfEntries(log)
			var r *Repo
			if tt.indexing {
				r = openIndexing(t, filepath.Join(t.TempDir(), "repo.db"), mem)
			} else {
				r = openTest(t)
			}
			mustApply(t, r, log)
			tt.damage(t, r, mem)
			msgs, err := r.Read("a", 1, 20, 0, 0)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Source != "a" || ce.Seq != tt.first {
				t.Fatalf("Read: %v, want a CorruptError for message %d", err, tt.first)
			}
			if uint64(len(msgs)) != tt.first-1 {
				t.Fatalf("Read returned %d messages before the damaged one, want %d", len(msgs), tt.first-1)
			}
			for _, m := range msgs {
				if m.CRC != Checksum(m.Payload) || !bytes.Equal(m.Payload, payloads("a", m.Seq, 1)[0]) {
					t.Fatalf("message %d served wrong: %q crc %08x", m.Seq, m.Payload, m.CRC)
				}
			}
			if r.CorruptCount() != 1 {
				t.Errorf("CorruptCount = %d, want 1", r.CorruptCount())
			}
			// Reads that stop before the damaged message are whole.
			if msgs, err := r.Read("a", 1, tt.first-1, 0, 0); err != nil || uint64(len(msgs)) != tt.first-1 {
				t.Errorf("Read before the damage: %d messages, %v", len(msgs), err)
			}
			// Nor does a snapshot ship it.
			snap, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Release()
			var buf bytes.Buffer
			if _, err := snap.WriteTo(&buf); !errors.Is(err, ErrCorrupt) {
				t.Errorf("snapshot of a damaged repository: %v, want ErrCorrupt", err)
			}
			// A copy that does not match the message's CRC is no substitute.
			snap.UseCopies(func(source string, seq uint64, crc uint32) ([]byte, bool) {
				return []byte("a forged copy"), true
			})
			if _, err := snap.WriteTo(io.Discard); !errors.Is(err, ErrCorrupt) {
				t.Errorf("snapshot with forged copies: %v, want ErrCorrupt", err)
			}
			// Intact copies from elsewhere (the store's damage repair) take
			// the damaged messages' places: the stream restores to the
			// state of a repository that was never damaged.
			var asked []uint64
			snap.UseCopies(func(source string, seq uint64, crc uint32) ([]byte, bool) {
				asked = append(asked, seq)
				return payloads("a", seq, 1)[0], true
			})
			buf.Reset()
			if _, err := snap.WriteTo(&buf); err != nil {
				t.Fatalf("snapshot with intact copies: %v", err)
			}
			if asked[0] != tt.first || asked[len(asked)-1] != 20 {
				t.Errorf("copies asked for %v, want %d..20", asked, tt.first)
			}
			restored := openTest(t)
			if err := restored.Restore(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			healthy := openTest(t)
			mustApply(t, healthy, log)
			if mustDigest(t, restored) != mustDigest(t, healthy) {
				t.Error("restored from a stream with intact copies: the state differs from the undamaged one")
			}
		})
	}
}

// An entry whose payloads do not match the checksums it carries is never
// applied: the store's copy of the entry is damaged, and Apply fails the
// batch (the store stops) rather than store what its peers do not.
func TestApplyRefusesAnEntryFailingItsChecksums(t *testing.T) {
	c := pub("a", 1, 3)
	for _, p := range c.Payloads {
		c.Checksums = append(c.Checksums, Checksum(p))
	}
	data := EncodePublish(c)
	if CommandType(data[0]) != CmdPublishChecksums {
		t.Fatalf("a Publish with checksums encodes as %v", CommandType(data[0]))
	}
	data[len(data)-20] ^= 1 // inside the last payload
	r := openTest(t)
	if _, err := r.Apply([]Entry{{Index: 1, Term: 1, Data: data}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Apply of a damaged entry: %v, want ErrCorrupt", err)
	}
	if r.AppliedIndex() != 0 {
		t.Fatal("the damaged entry was applied")
	}
	ok := EncodePublish(Publish{Source: "a", FirstSeq: 1, Payloads: c.Payloads, Checksums: c.Checksums})
	res := mustApply(t, r, []Entry{{Index: 1, Term: 1, Data: ok}})
	if res[0].Publish == nil || res[0].Publish.Stored != 3 {
		t.Fatalf("the good entry: %+v", res[0])
	}
	msgs, err := r.Read("a", 1, 3, 0, 0)
	if err != nil || len(msgs) != 3 || msgs[2].CRC != c.Checksums[2] {
		t.Fatalf("Read: %v, %v", msgs, err)
	}
}

// LowestLogRef follows the oldest retained message's entry: it moves as
// Trim releases messages, and an open snapshot keeps the entries it may
// still stream.
func TestLowestLogRef(t *testing.T) {
	log := logOf(1, pub("a", 1, 5), pub("b", 1, 5), pub("a", 6, 5))
	r := openIndexing(t, filepath.Join(t.TempDir(), "repo.db"), logOfEntries(log))
	if _, ok := r.LowestLogRef(); ok {
		t.Fatal("an empty repository needs log entries")
	}
	mustApply(t, r, log)
	if low, ok := r.LowestLogRef(); !ok || low != 1 {
		t.Fatalf("LowestLogRef = %d, %v; want 1", low, ok)
	}
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, []Entry{{Index: 4, Term: 1, Data: EncodeTrim(Trim{Source: "a", Through: 7})}})
	if low, _ := r.LowestLogRef(); low != 1 {
		t.Errorf("with a snapshot open: LowestLogRef = %d, want 1", low)
	}
	snap.Release()
	if low, _ := r.LowestLogRef(); low != 2 {
		t.Errorf("after the trim: LowestLogRef = %d, want 2 (b's entry; a's second is straddled at 3)", low)
	}
	mustApply(t, r, []Entry{{Index: 5, Term: 1, Data: EncodeTrim(Trim{Source: "b", Through: 5})}})
	if low, hi, _ := r.LogRefRange(); low != 3 || hi != 3 {
		t.Errorf("LogRefRange = %d..%d, want 3..3", low, hi)
	}
	r2 := reopenIndexing(t, r, log)
	if low, _ := r2.LowestLogRef(); low != 3 {
		t.Errorf("after reopening: LowestLogRef = %d, want 3", low)
	}
}

func reopenIndexing(t *testing.T, r *Repo, log []Entry) *Repo {
	t.Helper()
	path := r.Path()
	r.Close()
	return openIndexing(t, path, logOfEntries(log))
}

// A version 2 file (legacy runs, no checksums) opens, reads as before
// (its messages without a CRC), takes new messages with CRCs beside the
// old ones, and is recorded as version 3.
func TestOpensVersion2Files(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.db")
	r := openAt(t, path)
	mustApply(t, r, logOf(1, pub("a", 1, 4)))
	r.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		msgs := tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs)
		if err := msgs.Put(u64(1), encodeRun(payloads("a", 1, 4))); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, u64(2))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r = openAt(t, path)
	mustApply(t, r, logOf(2, pub("a", 5, 2)))
	msgs, err := r.Read("a", 1, 10, 0, 0)
	if err != nil || len(msgs) != 6 {
		t.Fatalf("Read: %d messages, %v", len(msgs), err)
	}
	for _, m := range msgs {
		if want := payloads("a", m.Seq, 1)[0]; !bytes.Equal(m.Payload, want) {
			t.Errorf("message %d = %q", m.Seq, m.Payload)
		}
		if (m.Seq <= 4) != (m.CRC == 0) {
			t.Errorf("message %d has CRC %08x", m.Seq, m.CRC)
		}
	}
	var v uint64
	_ = r.view(func(tx *bolt.Tx) error { v = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keyFormat)); return nil })
	if v != FormatVersion {
		t.Errorf("format recorded %d, want %d", v, FormatVersion)
	}
}

// A file of a newer format is refused as such, not as damage: its store
// must run the newer binary.
func TestOpenRefusesNewerFormatWithInstructions(t *testing.T) {
	_, err := Open(repoWithFormat(t, FormatVersion+1), Options{})
	if !errors.Is(err, ErrNewerFormat) || !bytes.Contains([]byte(err.Error()), []byte("newer umstored")) {
		t.Fatalf("Open: %v, want ErrNewerFormat telling to run the newer umstored", err)
	}
}

// A repair's copy of a damaged message (a Publish of the same sequence
// number, the same CRC) replaces it: a duplicate as for every store, but
// this store's damaged copy is rewritten, so it serves the message again
// and digests as an undamaged member. A different payload is a conflict
// and replaces nothing. Trimming afterwards leaves no reference behind.
func TestRepairCopyHealsADamagedMessage(t *testing.T) {
	log := logOf(1, Register{Source: "a", Session: "s"}, pub("a", 1, 10), pub("a", 11, 10))
	healthy := openTest(t)
	mustApply(t, healthy, log)
	want := mustDigest(t, healthy)
	for _, indexing := range []bool{false, true} {
		t.Run(fmt.Sprint("log runs ", indexing), func(t *testing.T) {
			mem := logOfEntries(log)
			var r *Repo
			if indexing {
				r = openIndexing(t, filepath.Join(t.TempDir(), "repo.db"), mem)
			} else {
				r = openTest(t)
			}
			mustApply(t, r, log)
			if indexing {
				d := bytes.Clone(mem[3])
				i := bytes.Index(d, []byte("a-15"))
				d[i+2] ^= 0x04
				mem[3] = d
			} else {
				err := r.db.Update(func(tx *bolt.Tx) error {
					msgs := tx.Bucket(bucketSources).Bucket([]byte("a")).Bucket(bucketMsgs)
					v := bytes.Clone(msgs.Get(u64(11)))
					i := bytes.Index(v, []byte("a-15"))
					v[i+2] ^= 0x04
					return msgs.Put(u64(11), v)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Read("a", 1, 20, 0, 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read of the damaged repository: %v", err)
			}
			// A conflicting copy heals nothing.
			res := mustApply(t, r, []Entry{{Index: 4, Term: 1, Data: EncodePublish(Publish{Source: "a", FirstSeq: 15, Payloads: [][]byte{[]byte("other")}})}})
			if res[0].Publish.Conflicts != 1 || r.HealedCount() != 0 {
				t.Fatalf("a conflicting copy: %+v, healed %d", res[0].Publish, r.HealedCount())
			}
			res = mustApply(t, r, []Entry{{Index: 5, Term: 1, Data: EncodePublish(pub("a", 14, 3))}})
			if p := res[0].Publish; p.Duplicates != 3 || p.Stored != 0 || p.Conflicts != 0 {
				t.Fatalf("the repair's copy: %+v", p)
			}
			if r.HealedCount() != 1 {
				t.Fatalf("HealedCount = %d, want 1", r.HealedCount())
			}
			msgs, err := r.Read("a", 1, 20, 0, 0)
			if err != nil || len(msgs) != 20 {
				t.Fatalf("Read after the repair: %d messages, %v", len(msgs), err)
			}
			// The healthy member saw the same entries 4 and 5 (no-ops).
			h2 := openTest(t)
			mustApply(t, h2, log)
			mustApply(t, h2, []Entry{{Index: 4, Term: 1, Data: EncodePublish(Publish{Source: "a", FirstSeq: 15, Payloads: [][]byte{[]byte("other")}})}, {Index: 5, Term: 1, Data: EncodePublish(pub("a", 14, 3))}})
			if got := mustDigest(t, r); got != want || got != mustDigest(t, h2) {
				t.Error("the healed repository digests differently from a healthy member")
			}
			mustApply(t, r, []Entry{{Index: 6, Term: 1, Data: EncodeTrim(Trim{Source: "a", Through: 20})}})
			if low, high, _ := r.LogRefRange(); low != 0 || high != 0 {
				t.Errorf("after trimming everything, references remain to %d..%d", low, high)
			}
		})
	}
}
