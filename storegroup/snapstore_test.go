package storegroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// snapFixture is a repository and a snapshot store over real files.
type snapFixture struct {
	t     *testing.T
	repo  *repository.Repo
	store *snapshotStore
	index uint64
}

func newSnapFixture(t *testing.T) *snapFixture {
	t.Helper()
	dir := t.TempDir()
	repo, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	files, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &snapFixture{t: t, repo: repo, store: &snapshotStore{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots"), repo: repo}}
}

// publish applies one Publish entry of n messages at the next raft index.
func (f *snapFixture) publish(first uint64, n int) {
	f.t.Helper()
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte(fmt.Sprintf("m-%d", first+uint64(i)))
	}
	f.index++
	cmd := repository.EncodePublish(repository.Publish{Source: "s", FirstSeq: first, Payloads: payloads})
	if _, err := f.repo.Apply([]repository.Entry{{Index: f.index, Term: 2, Data: cmd}}); err != nil {
		f.t.Fatal(err)
	}
}

// persist stores a snapshot raft would record at index, written by fs.
func (f *snapFixture) persist(index uint64, fs raft.FSMSnapshot) string {
	f.t.Helper()
	sink, err := f.store.Create(raft.SnapshotVersionMax, index, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := fs.Persist(sink); err != nil {
		f.t.Fatal(err)
	}
	return sink.ID()
}

// readAll opens id and reads it whole, checking the meta's size.
func (f *snapFixture) readAll(id string) (*raft.SnapshotMeta, []byte) {
	f.t.Helper()
	meta, rc, err := f.store.Open(id)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		f.t.Fatal(err)
	}
	if int64(len(b)) != meta.Size {
		f.t.Fatalf("snapshot %s: read %d bytes, meta says %d", id, len(b), meta.Size)
	}
	return meta, b
}

// restoredDigest restores a snapshot stream into a new repository.
func restoredDigest(t *testing.T, stream []byte) (string, uint64) {
	t.Helper()
	r, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Restore(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	d, err := r.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d, r.AppliedIndex()
}

// A store's own snapshot is a reference of a few bytes; opened (to send to
// a member too far behind), it is a copy of the repository as it is then,
// standing for the repository's applied index.
func TestOwnSnapshotRefersToTheRepository(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	f.publish(1, 100)
	f.publish(101, 100)
	id := f.persist(f.index, &refSnapshot{index: f.repo.AppliedIndex(), term: f.repo.AppliedTerm()})
	metas, err := f.store.List()
	if err != nil || len(metas) != 1 || metas[0].Size != refLen {
		t.Fatalf("stored snapshots %+v (%v), want one of %d bytes", metas, err, refLen)
	}
	f.publish(201, 50) // the repository moves on after the snapshot
	meta, stream := f.readAll(id)
	if meta.Index != 3 || meta.Term != 2 {
		t.Fatalf("opened reference stands for index %d term %d, want the repository's 3, 2", meta.Index, meta.Term)
	}
	want, err := f.repo.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got, applied := restoredDigest(t, stream); got != want || applied != 3 {
		t.Fatalf("restored copy: digest %s at index %d, want %s at 3", got, applied, want)
	}
}

// Raft's snapshot index can be ahead of the repository's (a new leader's
// no-op is never handed to the fsm): the copy then stands for raft's index.
func TestOpenedReferenceKeepsRaftsLaterIndex(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	f.publish(1, 10)
	id := f.persist(f.index+1, &refSnapshot{index: f.repo.AppliedIndex(), term: f.repo.AppliedTerm()})
	meta, _ := f.readAll(id)
	if meta.Index != 2 {
		t.Fatalf("opened reference stands for index %d, want raft's 2", meta.Index)
	}
}

// A full snapshot (one a member received from its leader) is written
// straight into a staged repository file as it arrives, and what the
// snapshot store returns for it until it is installed restores exactly
// the state that was sent; once installed it reads as a reference.
func TestFullSnapshotIsStagedAsReceived(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	f.publish(1, 10)
	full, err := f.repo.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := full.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	full.Release()
	sent, err := f.repo.Digest()
	if err != nil {
		t.Fatal(err)
	}
	sink, err := f.store.Create(raft.SnapshotVersionMax, 7, 3, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b := want.Bytes(); len(b) > 0; b = b[min(len(b), 100):] { // as raft copies it, piece by piece
		if _, err := sink.Write(b[:min(len(b), 100)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	f.publish(11, 10)
	meta, rc, err := f.store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	if meta.Index != 7 || meta.Term != 3 {
		t.Fatalf("received snapshot came back as index %d term %d, want 7, 3", meta.Index, meta.Term)
	}
	if err := f.repo.Restore(rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got, _ := f.repo.Digest(); got != sent {
		t.Fatal("restoring the received snapshot did not give the state that was sent")
	}
	// Installed, it stands for the repository: opening it streams a copy.
	_, got := f.readAll(sink.ID())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the installed snapshot reads back as %d bytes, want the %d sent", len(got), want.Len())
	}
}

// A repository behind its own reference snapshot (its file replaced by an
// older one) is refused, never sent or taken for caught up.
func TestRepositoryBehindItsReferenceIsRefused(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	f.publish(1, 10)
	id := f.persist(5, &refSnapshot{index: 5, term: 2})
	if _, _, err := f.store.Open(id); !errors.Is(err, errBehindSnapshot) {
		t.Fatalf("open a reference ahead of the repository: %v, want errBehindSnapshot", err)
	}
}
