package repository

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSnapshotRestoreWhileApplying(t *testing.T) {
	log := randomLog(11, 1200)
	cut := 600
	snapIndex := log[cut-1].Index

	// What the snapshot must contain: exactly the first cut entries.
	want := openTest(t)
	mustApply(t, want, log[:cut])
	wantDigest := mustDigest(t, want)

	r := openTest(t)
	mustApply(t, r, log[:cut])
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if snap.Index() != snapIndex || snap.Term() != log[cut-1].Term {
		t.Fatalf("snapshot at %d/%d, want %d/%d", snap.Index(), snap.Term(), snapIndex, log[cut-1].Term)
	}

	// Apply the rest while the snapshot is written out through a pipe
	// read slowly.
	var wg sync.WaitGroup
	applyErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := cut; i < len(log); i += 10 {
			if _, err := r.Apply(log[i:min(len(log), i+10)]); err != nil {
				applyErr <- err
				return
			}
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		_, err := snap.WriteTo(pw)
		pw.CloseWithError(err)
	}()
	var buf bytes.Buffer
	chunk := make([]byte, 4096)
	for {
		n, err := pr.Read(chunk)
		buf.Write(chunk[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("writing snapshot: %v", err)
		}
	}
	wg.Wait()
	select {
	case err := <-applyErr:
		t.Fatalf("Apply during snapshot: %v", err)
	default:
	}
	if int64(buf.Len()) != snap.Size() {
		t.Errorf("snapshot wrote %d bytes, Size says %d", buf.Len(), snap.Size())
	}
	snap.Release()
	snap.Release() // harmless
	if int64(buf.Len()) != snap.Size() {
		t.Errorf("Size after Release = %d, want %d", snap.Size(), buf.Len())
	}
	if _, err := snap.WriteTo(io.Discard); err == nil {
		t.Error("WriteTo after Release succeeded")
	}

	// A fresh repository restored from it.
	fresh := openTest(t)
	if err := fresh.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if fresh.AppliedIndex() != snapIndex {
		t.Errorf("restored AppliedIndex %d, want %d", fresh.AppliedIndex(), snapIndex)
	}
	if d := mustDigest(t, fresh); d != wantDigest {
		t.Error("restored repository differs from the state at the snapshot")
	}

	// A repository further ahead is rolled back to the snapshot, and the
	// rest of the log then brings it to the same state as the original.
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("Restore over a live repository: %v", err)
	}
	if r.AppliedIndex() != snapIndex || mustDigest(t, r) != wantDigest {
		t.Error("Restore over a live repository did not replace its state")
	}
	mustApply(t, want, log[cut:])
	mustApply(t, r, log) // the first cut entries are skipped
	if mustDigest(t, r) != mustDigest(t, want) {
		t.Error("applying the log after a restore diverged")
	}

	// The restored file is durable: it is what a reopen finds.
	path := fresh.Path()
	fresh.Close()
	again := openAt(t, path)
	if again.AppliedIndex() != snapIndex || mustDigest(t, again) != wantDigest {
		t.Error("restored state not found after reopen")
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	stream := snapshotBytes(t, openApplied(t, pub("a", 1, 50)))
	corrupt := append([]byte(nil), stream...)
	corrupt[len(corrupt)/2] ^= 0x01
	framed := func(file []byte) []byte {
		var b bytes.Buffer
		if _, err := writeStream(&b, 1, 1, int64(len(file)), func(w io.Writer) (int64, error) {
			n, err := w.Write(file)
			return int64(n), err
		}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	rawFile := stream[streamHeaderLen : len(stream)-32]

	tests := []struct {
		name string
		rd   io.Reader
	}{
		{"empty", bytes.NewReader(nil)},
		{"not a snapshot stream", strings.NewReader(strings.Repeat("not a database ", 1000))},
		{"bare bbolt file without framing", bytes.NewReader(rawFile)},
		{"truncated", bytes.NewReader(stream[:len(stream)/2])},
		{"checksum missing", bytes.NewReader(stream[:len(stream)-32])},
		{"one bit flipped", bytes.NewReader(corrupt)},
		{"trailing data", bytes.NewReader(append(append([]byte(nil), stream...), 0))},
		{"read error", io.MultiReader(bytes.NewReader(stream[:100]), errReader{})},
		{"framed garbage", bytes.NewReader(framed(bytes.Repeat([]byte("garbage!"), 2048)))},
		{"framed foreign bbolt file", bytes.NewReader(framed(foreignBolt(t)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openApplied(t, Register{Source: "keep", UnixNano: 1}, pub("keep", 1, 3))
			before := mustDigest(t, r)
			err := r.Restore(tt.rd)
			if err == nil {
				t.Fatal("Restore accepted a bad snapshot")
			}
			if tt.name != "read error" && !errors.Is(err, ErrFormat) {
				t.Errorf("Restore error %v does not wrap ErrFormat", err)
			}
			t.Log(err)
			if r.AppliedIndex() != 2 || mustDigest(t, r) != before {
				t.Error("a refused Restore changed the repository")
			}
			entries, _ := os.ReadDir(filepath.Dir(r.Path()))
			if len(entries) != 1 {
				t.Errorf("staging files left behind: %v", entries)
			}
		})
	}

}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// foreignBolt returns a valid bbolt file that is not a repository.
func foreignBolt(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	other := openAt(t, path)
	other.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Rename the meta bucket in place: same length, so the file stays valid.
	i := bytes.Index(data, []byte("meta"))
	if i < 0 {
		t.Fatal("meta bucket name not found")
	}
	copy(data[i:], "mota")
	return data
}

func TestReadsDuringRestore(t *testing.T) {
	snap := snapshotBytes(t, openApplied(t, pub("a", 1, 200)))

	r := openApplied(t, pub("a", 1, 10))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				msgs, err := r.Read("a", 1, 1000, 0, 0)
				if err != nil || (len(msgs) != 10 && len(msgs) != 200) {
					t.Errorf("read during restore: %d messages, %v", len(msgs), err)
					return
				}
				if _, err := r.Sources(); err != nil {
					t.Errorf("Sources during restore: %v", err)
					return
				}
				_ = r.AppliedIndex()
				_ = r.GroupID()
			}
		}()
	}
	for range 5 {
		if err := r.Restore(bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if r.AppliedIndex() != 1 {
		t.Errorf("AppliedIndex = %d", r.AppliedIndex())
	}
}

func TestRestoreRefusesAnotherGroup(t *testing.T) {
	g1 := snapshotBytes(t, openApplied(t, InitGroup{GroupID: "g1", Index: 1}, pub("a", 1, 2)))
	g2 := snapshotBytes(t, openApplied(t, InitGroup{GroupID: "g2", Index: 2}, pub("a", 1, 2)))
	none := snapshotBytes(t, openApplied(t, pub("a", 1, 2)))

	r := openApplied(t, InitGroup{GroupID: "g1", Index: 1})
	for name, snap := range map[string][]byte{"other group": g2, "no group": none} {
		if err := r.Restore(bytes.NewReader(snap)); !errors.Is(err, ErrGroupMismatch) {
			t.Errorf("%s: Restore = %v, want ErrGroupMismatch", name, err)
		}
	}
	if err := r.Restore(bytes.NewReader(g1)); err != nil {
		t.Errorf("same group: %v", err)
	}
	// A repository without identity (a new, empty store) takes any snapshot.
	empty := openTest(t)
	if err := empty.Restore(bytes.NewReader(g2)); err != nil || empty.GroupID() != "g2" || empty.GroupIndex() != 2 {
		t.Errorf("empty store: %v, group %q/%d", err, empty.GroupID(), empty.GroupIndex())
	}
}
