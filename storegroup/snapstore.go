package storegroup

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/chunkpipe"
	"umstore/repository"
)

// A store's own raft snapshots do not copy the repository. The repository
// is durable by itself (each applied batch is committed with an fsync, and
// raft runs with NoSnapshotRestoreOnStart), so a snapshot taken to compact
// the log only records the applied index and term it stands for: a
// reference to the repository file. Copying the whole file instead cost
// seconds of CPU and disk per store, every few minutes, in proportion to
// what the store retains, and stalled publishing while it ran (BENCH.md).
//
// The full state is needed only when a leader sends a snapshot to a member
// that is too far behind for the log: then Open streams a fresh, consistent
// copy of the repository, taken at that moment. Its applied index is at or
// above the reference's, and the snapshot's meta says so; that is safe
// because every entry up to it is committed, and the member replays the log
// after it. A snapshot a member receives from its leader is the full stream
// and is stored as it is, so a member that crashes before restoring it
// restores it at its next start.

// refMagic starts a reference snapshot; a full one starts with the
// repository stream's own magic.
var refMagic = []byte("UMSNAPREF1\n")

const refLen = 11 + 8 + 8 // magic, applied index, applied term

// errBehindSnapshot: the repository is behind a reference snapshot of its
// own, which only a replaced or damaged file can cause.
var errBehindSnapshot = errors.New("the repository is behind its own snapshot: its file was replaced or lost writes; move the store's data directory aside so that it rejoins its group, or restore a backup")

// snapshotStore is raft's file snapshot store with reference snapshots.
type snapshotStore struct {
	*raft.FileSnapshotStore
	dir     string // raft's snapshots directory, dir/snapshots
	repo    *repository.Repo
	metrics *storeMetrics
	// received counts the bytes of streams received (nil: not counted).
	received *received
	// intact finds intact copies of messages damaged in this store's
	// files, so that a stream it sends carries them instead of failing
	// (the damage repair's; nil in tests without one).
	intact repository.IntactCopy
}

func encodeRef(index, term uint64) []byte {
	b := make([]byte, 0, refLen)
	b = append(b, refMagic...)
	b = binary.BigEndian.AppendUint64(b, index)
	return binary.BigEndian.AppendUint64(b, term)
}

// decodeRef reads a reference snapshot from head, which holds at least the
// first refLen bytes of a snapshot. ok is false for a full snapshot.
func decodeRef(head []byte) (index, term uint64, ok bool) {
	if len(head) < refLen || !bytes.Equal(head[:len(refMagic)], refMagic) {
		return 0, 0, false
	}
	head = head[len(refMagic):]
	return binary.BigEndian.Uint64(head), binary.BigEndian.Uint64(head[8:]), true
}

// open opens a stored snapshot and tells whether it is a reference, and to
// which repository index.
func (s *snapshotStore) open(id string) (meta *raft.SnapshotMeta, r io.ReadCloser, ref bool, refIndex uint64, err error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		return nil, nil, false, 0, err
	}
	if err := s.checkMeta(meta); err != nil {
		rc.Close()
		return nil, nil, false, 0, err
	}
	br := bufio.NewReader(rc)
	head, err := br.Peek(refLen)
	if err != nil && !errors.Is(err, io.EOF) {
		rc.Close()
		return nil, nil, false, 0, fmt.Errorf("read snapshot %s: %w", id, err)
	}
	refIndex, _, ref = decodeRef(head)
	if !ref {
		// The marker of a staged snapshot (Create): a reference once its
		// file was installed, to the index the staged repository stood for.
		if b, _ := br.Peek(4096); len(b) > 0 {
			if marker, index, present := s.repo.StagedMarker(b); marker && !present {
				ref, refIndex = true, index
			}
		}
	}
	return meta, peekReadCloser{br, rc}, ref, refIndex, nil
}

// peekReadCloser is a stored snapshot being read, its head peekable.
type peekReadCloser struct {
	*bufio.Reader
	io.Closer
}

// Create implements raft.SnapshotStore. A snapshot stream received from a
// leader is written straight into a new repository file as it arrives
// (repository.Stage), and the snapshot store keeps only the marker naming
// it: each payload is written once, not once into the received copy and
// again by the restore. Anything else (the store's own references, a
// stream of an older umstored) is stored as it comes.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &stagingSink{SnapshotSink: sink, repo: s.repo, store: s}, nil
}

// stagingSink routes a received stream into repository.Stage.
type stagingSink struct {
	raft.SnapshotSink
	repo  *repository.Repo
	store *snapshotStore // writes the meta's checksum once raft closed it

	head   []byte            // the first bytes, until the kind is known
	pw     *chunkpipe.Writer // to Stage, once the stream is one it takes
	staged chan stageResult
	plain  bool // stored as it comes
}

type stageResult struct {
	marker []byte
	err    error
}

func (k *stagingSink) Write(p []byte) (int, error) {
	k.store.received.snapshot(len(p))
	switch {
	case k.plain:
		return k.SnapshotSink.Write(p)
	case k.pw != nil:
		return k.pw.Write(p)
	}
	k.head = append(k.head, p...)
	if len(k.head) < 8 {
		return len(p), nil
	}
	head := k.head
	k.head = nil
	if !repository.IsStreamMagic(head) {
		k.plain = true
		if _, err := k.SnapshotSink.Write(head); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	pr, pw := chunkpipe.Pipe(snapshotChunk, snapshotChunksAhead)
	k.pw, k.staged = pw, make(chan stageResult, 1)
	go func() {
		marker, err := k.repo.Stage(pr)
		pr.CloseWithError(err) // unblocks a writer if Stage stopped early
		k.staged <- stageResult{marker, err}
	}()
	if _, err := pw.Write(head); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close finishes the stream: a staged one stores its marker. Once raft has
// written the snapshot's meta.json, its checksum is written beside it.
func (k *stagingSink) Close() error {
	if err := k.finish(); err != nil {
		return err
	}
	if err := k.store.writeMetaSum(k.ID()); err != nil {
		return fmt.Errorf("snapshot %s: write the checksum of its meta.json: %w", k.ID(), err)
	}
	return nil
}

// finish ends the stream in raft's sink.
func (k *stagingSink) finish() error {
	if k.pw == nil {
		if len(k.head) > 0 {
			if _, err := k.SnapshotSink.Write(k.head); err != nil {
				_ = k.SnapshotSink.Cancel()
				return err
			}
		}
		return k.SnapshotSink.Close()
	}
	k.pw.Close()
	res := <-k.staged
	if res.err != nil {
		_ = k.SnapshotSink.Cancel()
		return res.err
	}
	if _, err := k.SnapshotSink.Write(res.marker); err != nil {
		_ = k.SnapshotSink.Cancel()
		return err
	}
	return k.SnapshotSink.Close()
}

// Cancel abandons the stream, and a file staged from it.
func (k *stagingSink) Cancel() error {
	if k.pw != nil {
		k.pw.CloseWithError(errors.New("snapshot cancelled"))
		if res := <-k.staged; res.err == nil {
			k.repo.DiscardStaged(res.marker)
		}
		k.pw = nil
	}
	return k.SnapshotSink.Cancel()
}

// Open implements raft.SnapshotStore. A full snapshot is returned as it is
// stored, and so is the marker of a staged one not installed yet (the FSM
// installs it); a reference, or the marker of a staged snapshot already
// installed (open treats it as a reference), becomes a copy of the
// repository as it is now.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, ref, refIndex, err := s.open(id)
	if err != nil || !ref {
		return meta, rc, err
	}
	rc.Close()
	snap, err := s.repo.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s refers to the repository: %w", id, err)
	}
	if snap.Index() < refIndex {
		snap.Release()
		return nil, nil, fmt.Errorf("%w: snapshot %s stands for applied index %d, but the repository is at %d", errBehindSnapshot, id, refIndex, snap.Index())
	}
	// The copy stands for the later of the two indexes. Raft's index can be
	// ahead of the repository's: entries raft does not hand the fsm (a new
	// leader's no-op) advance it without changing the repository.
	live := *meta
	if snap.Index() > meta.Index {
		live.Index, live.Term = snap.Index(), snap.Term()
	}
	live.Size = snap.Size()
	if s.intact != nil {
		snap.UseCopies(s.intact)
	}
	// A buffered pipe: the repository's reads and raft's sends overlap
	// (with io.Pipe they took turns, and the stream ran at a fraction of
	// the disk's bandwidth).
	pr, pw := chunkpipe.Pipe(snapshotChunk, snapshotChunksAhead)
	go func() {
		start := time.Now()
		_, err := snap.WriteTo(pw)
		snap.Release()
		if err == nil && s.metrics != nil {
			s.metrics.snapshotSecs.Observe(time.Since(start).Seconds())
		}
		pw.CloseWithError(err)
	}()
	return &live, pr, nil
}

// A snapshot stream's pipes (between the leader's repository and raft's
// connection, and between raft's connection and the member's new
// repository file) buffer up to snapshotChunksAhead chunks of
// snapshotChunk bytes.
const (
	snapshotChunk       = 256 << 10
	snapshotChunksAhead = 8
)

// refSnapshot is what the fsm hands raft to persist: a reference.
type refSnapshot struct {
	index, term uint64
	metrics     *storeMetrics
}

// Persist implements raft.FSMSnapshot.
func (r *refSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(encodeRef(r.index, r.term)); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot reference: %w", err)
	}
	if r.metrics != nil {
		r.metrics.snapshots.Add(1)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (r *refSnapshot) Release() {}
