package wire

import "strings"

// Frames of an online backup (umstored backup): an operator asks a group's
// leader for a consistent copy of its repository, and the leader streams
// the repository's snapshot stream (repository.Snapshot.WriteTo, UMSNAP02),
// taken at one applied index, in BackupChunk frames. Who may ask is decided
// as for a Shutdown: the deployment's operator token when it has one.
const (
	TypeBackup      Type = 50
	TypeBackupChunk Type = 51
)

// Backup asks a group's leader for a copy of its repository. A store that
// does not lead answers NotLeader; one that refuses answers Error
// (CodeAuth without the operator's token).
type Backup struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Token    string // the deployment's operator token, if it has one
}

// BackupChunk is one piece of the copy a Backup asked for, in order. Every
// chunk says what the whole copy stands for: the group, its identity, the
// applied index and term it was taken at, and the stream's size in bytes.
// The last chunk has Last set (and may carry no Data).
type BackupChunk struct {
	_msgpack struct{} `msgpack:",as_array"`
	ReqID    uint64
	Store    string
	Group    int
	GroupID  string
	Index    uint64
	Term     uint64
	Size     int64
	Data     []byte
	Last     bool
}

func (*Backup) Type() Type      { return TypeBackup }
func (*BackupChunk) Type() Type { return TypeBackupChunk }

// newBackupMessage returns an empty message for a frame type of this file,
// or nil.
func newBackupMessage(t Type) Message {
	switch t {
	case TypeBackup:
		return &Backup{}
	case TypeBackupChunk:
		return &BackupChunk{}
	}
	return nil
}

// RestoredMark separates, in the identity of a group restored from a
// backup (umstored restore), the group's own identity from the identity of
// the group it was restored from: "<own>-restored-from-<parent>". Clients
// see it in GroupID fields, and may tell an operator that a group was
// restored rather than re-created empty.
const RestoredMark = "-restored-from-"

// RestoredFrom returns the identity group identity id was restored from
// (the parent's own part), or "" if id is not a restored group's.
func RestoredFrom(id string) string {
	if i := strings.Index(id, RestoredMark); i >= 0 {
		return id[i+len(RestoredMark):]
	}
	return ""
}

// OwnGroupID is group identity id without what it says it was restored
// from.
func OwnGroupID(id string) string {
	if i := strings.Index(id, RestoredMark); i >= 0 {
		return id[:i]
	}
	return id
}
