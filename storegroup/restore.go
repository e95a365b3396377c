package storegroup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"umstore/internal/atomicfile"
	"umstore/repository"
	"umstore/wire"
)

// A store restored from a backup (`umstored restore`) starts as a store
// with state, not as an empty one: its data directory holds the backed-up
// repository, a raft snapshot standing for the backup's applied index with
// the group's new members as its configuration, and the backup's term as
// raft's current term. So the first `umstored run` neither bootstraps the
// group (SPEC §4 rule 3: the stores are not empty) nor waits to rejoin
// anyone: the restored members elect a leader among themselves, and the
// log continues after the backed-up index.
//
// A restored group has a new identity that names the one it came from
// (RestoredGroupID), so that it is never taken for the group it was copied
// from: a restored store whose members still hold the old identity refuses
// to start (checkIdentity), rather than joining, replacing or merging with
// them.

// RestoredGroupID is the identity of group identity old restored from the
// backup named backupID: the same on every host that restores the backup
// (each restores its own stores), never old itself, and naming old's own
// part (an identity restored twice names only its parent).
func RestoredGroupID(backupID, old string) string {
	sum := sha256.Sum256([]byte("umstore restore\x00" + backupID + "\x00" + old))
	return hex.EncodeToString(sum[:16]) + wire.RestoredMark + ownID(old)
}

// RestoredFrom returns the identity that group identity id was restored
// from ("" if id is not a restored group's): its parent's own part.
func RestoredFrom(id string) string { return wire.RestoredFrom(id) }

// ownID is identity id without what it says it was restored from.
func ownID(id string) string { return wire.OwnGroupID(id) }

// Restore is what RestoreDataDir lays out.
type Restore struct {
	// GroupID is the restored group's identity (RestoredGroupID).
	GroupID string
	// Peers maps each other group's identity in the backup to its restored
	// one, so that the restored groups remember each other.
	Peers map[string]string
	// Members are the group's members in the deployment restored into: the
	// configuration the group starts with.
	Members []Member
	// LogStore is the kind of raft log the store keeps (Config.LogStore).
	LogStore string
	// SessionsFreedAt is when the restored group frees every source and
	// receiver from the sessions of the deployment the backup came from
	// (repository.FreeSessions): the backup's time, the same on every host.
	SessionsFreedAt int64
}

// RestoreDataDir lays out data directory dir so that its store starts
// with the state of stream, a repository snapshot stream of a backup
// (repository.Snapshot.WriteTo), under the restored identity r says. dir
// must hold no state (a store's files are never overwritten: move them
// aside first). It returns the applied index and term of the restored
// state.
func RestoreDataDir(dir string, stream io.Reader, r Restore) (index, term uint64, err error) {
	if DataDirHasState(dir) {
		return 0, 0, fmt.Errorf("data directory %s already holds a store's state: restore never overwrites one; move it aside (or remove it) and restore again", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, 0, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	release, err := LockDataDirs(dir)
	if err != nil {
		return 0, 0, err
	}
	defer release()
	repo, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{})
	if err != nil {
		return 0, 0, err
	}
	err = repo.Restore(stream)
	if err == nil {
		err = repo.Reidentify(r.GroupID, r.Peers)
	}
	if err == nil {
		err = repo.FreeSessions(r.SessionsFreedAt)
	}
	index, term = repo.AppliedIndex(), repo.AppliedTerm()
	if cerr := repo.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("restore the repository into %s: %w", dir, err)
	}
	if index == 0 {
		return 0, 0, fmt.Errorf("restore into %s: the backup stands for no applied entry", dir)
	}
	if err := setRestoredTerm(dir, r.LogStore, term+RestoredTermStep); err != nil {
		return 0, 0, err
	}
	if err := writeRestoredSnapshot(dir, index, term, r.Members); err != nil {
		return 0, 0, err
	}
	era := restoredEra{From: wire.RestoredFrom(r.GroupID), GroupID: r.GroupID, Index: index, Term: term + RestoredTermStep}
	if err := era.write(dir); err != nil {
		return 0, 0, err
	}
	return index, term, nil
}

// restoredFile, in a restored store's data directory, records where the
// restored group's own log begins (restoredEra).
const restoredFile = "restored.json"

// restoredEra is where a restored group's own log begins: every entry
// after the backup's index has at least the restored term. One with a
// lower term after that index was written by a store of the group the
// backup came from (one left running, or started with its old files, at
// the addresses of the restored deployment): the store stops rather than
// apply it, so a backup is never merged with its origin. The zero value
// checks nothing.
type restoredEra struct {
	From    string `json:"restored_from"`
	GroupID string `json:"group_id"`
	Index   uint64 `json:"index"`
	Term    uint64 `json:"term"`
}

func (e restoredEra) write(dir string) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, restoredFile), append(b, '\n'), 0o640)
}

// readRestoredEra reads dir's restoredFile; the zero era if it has none.
func readRestoredEra(dir string) (restoredEra, error) {
	var e restoredEra
	b, err := os.ReadFile(filepath.Join(dir, restoredFile))
	if errors.Is(err, fs.ErrNotExist) {
		return e, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &e)
	}
	if err != nil {
		return e, fmt.Errorf("read %s: %w", filepath.Join(dir, restoredFile), err)
	}
	return e, nil
}

// check refuses a batch holding an entry of the group the backup came
// from.
func (e restoredEra) check(logs []*raft.Log) error {
	if e.Term == 0 {
		return nil
	}
	for _, l := range logs {
		if l.Index > e.Index && l.Term < e.Term {
			return fmt.Errorf("entry %d has term %d, but this store was restored from a backup of group %s at index %d and the restored group's terms begin at %d: a store of the group the backup came from is sending it (one still running, or started with its old files, at this deployment's addresses); the store does not apply it. Stop that store and move its data directory aside, then move this store's aside too and restore it again (umstored restore)", l.Index, l.Term, e.From, e.Index, e.Term)
		}
	}
	return nil
}

// RestoredTermStep is how far above the backup's term a restored group's
// raft terms start. Every election of the restored group is then at a
// term no group it came from plausibly reached, so a store of the old
// group that is still about (restoring into the same deployment, one host
// forgotten) can neither win a restored member's vote, its log's last term
// being lower, nor have its messages taken, their term being lower: the
// restored group never accepts the old one as a peer. checkIdentity also
// refuses to start a restored store among old ones.
const RestoredTermStep = 1 << 32

// setRestoredTerm makes term raft's current term, so that the restored
// group's first election is at a later term than every entry the snapshot
// stands for (raft compares logs by their last term).
func setRestoredTerm(dir, setting string, term uint64) error {
	kind, _, err := logStoreFor(dir, setting)
	if err != nil {
		return err
	}
	var raw rawLogStore
	if kind == LogStoreBoltDB {
		raw, err = openRaftLog(logPath(dir, kind))
	} else {
		raw, err = openWALLog(dir, hclog.NewNullLogger())
	}
	if err != nil {
		return fmt.Errorf("open the raft log in %s: %w", dir, err)
	}
	err = raw.SetUint64([]byte("CurrentTerm"), term)
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record the restored term in %s: %w", logPath(dir, kind), err)
	}
	return nil
}

// writeRestoredSnapshot writes the store's own kind of snapshot, a
// reference to the repository, at the restored index, with the group's
// members as the configuration raft starts with.
func writeRestoredSnapshot(dir string, index, term uint64, members []Member) error {
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("open the snapshot store in %s: %w", dir, err)
	}
	var servers []raft.Server
	for _, m := range members {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.Name), Address: raft.ServerAddress(m.RaftAddr)})
	}
	// The transport only encodes the configuration's legacy peer list.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	sink, err := files.Create(raft.SnapshotVersionMax, index, term, raft.Configuration{Servers: servers}, index, trans)
	if err != nil {
		return fmt.Errorf("create the restored snapshot in %s: %w", dir, err)
	}
	if _, err := sink.Write(encodeRef(index, term)); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write the restored snapshot in %s: %w", dir, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("write the restored snapshot in %s: %w", dir, err)
	}
	s := &snapshotStore{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots")}
	return s.writeMetaSum(sink.ID())
}
