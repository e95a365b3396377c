package repository

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by this package. Test for them with errors.Is;
// the wrapping error says which source, entry or file was involved.
var (
	// ErrStaleSession refuses a PublishAs whose session no longer holds
	// its source (it expired, or another publisher registered since).
	ErrStaleSession = errors.New("publisher session no longer holds the source")
	// ErrClosed is returned by every method of a Repo after Close, or after a
	// Restore that could not reopen the database. Reopen the repository (or
	// restart the store) to continue.
	ErrClosed = errors.New("repository is closed")

	// ErrFormat means a file is not a umstore repository, is damaged, or was
	// written in a format version this binary does not know. Nothing was
	// changed; use a matching umstored version or restore from a good copy.
	ErrFormat = errors.New("not a usable umstore repository or snapshot")

	// ErrNewerFormat means a file was written by a newer umstored, in a
	// format version this binary does not know; it comes wrapped together
	// with ErrFormat. Nothing was changed, and the file is not damaged: run
	// the newer umstored.
	ErrNewerFormat = errors.New("repository written by a newer umstored")
	// ErrLocked means another process has the repository file open (bbolt's
	// lock on it did not come within the time allowed).
	ErrLocked = errors.New("file is locked by another process")

	// ErrUnknownSource is returned by reads naming a source the group has never
	// seen registered or published. The publisher must register first. It is
	// also the deterministic Result.Err of a Consumed, Trim or ExpireSession
	// entry naming such a source: positions are recorded, messages dropped
	// and sessions expired only for sources the group holds.
	ErrUnknownSource = errors.New("unknown source")

	// ErrUnknownCommand means an entry's command type byte is not one this
	// binary knows. If the type is not marked ignorable, Apply refuses the
	// whole batch so that the store stops instead of diverging: upgrade
	// umstored on this host.
	ErrUnknownCommand = errors.New("unknown command type")

	// ErrUnknownField means an entry of a known type carries an essential
	// field this binary does not know (command_publish_keyed.go). Like an
	// unknown command type not marked ignorable, Apply refuses the whole
	// batch so that the store stops instead of applying the entry without
	// what the field says: upgrade umstored on this host.
	ErrUnknownField = errors.New("unknown command field")

	// ErrBadCommand means a command of a known type could not be decoded or
	// carries invalid values (empty source name, sequence number 0, ...). It is
	// a deterministic outcome: every store rejects the same entry the same way,
	// so Apply reports it in Result.Err and moves on.
	ErrBadCommand = errors.New("malformed command")

	// ErrSeqCeiling is the Result.Err (together with ErrBadCommand) of a
	// Publish or PublishAs reaching a sequence number above MaxSeq: nothing
	// of it is stored, whoever proposed it, so no entry can use up a
	// source's sequence numbers for good.
	ErrSeqCeiling = errors.New("sequence number above the ceiling")

	// ErrCorrupt means a stored message no longer matches the checksum it
	// was stored with: the file was damaged at rest. Read never returns
	// such a payload; it returns the messages before it and a
	// *CorruptError naming the message, so the caller can treat it as
	// missing and repair it from a healthy member or group.
	ErrCorrupt = errors.New("stored message damaged at rest")

	// ErrEntryDamaged means a raft log entry's payloads do not match the
	// checksums it carries (VerifyEntry). Where it was damaged (this
	// store's log, its memory, the network) is for the caller to say.
	ErrEntryDamaged = errors.New("a payload of the entry does not match the checksum it carries")

	// ErrGroupMismatch is the Result.Err of an InitGroup entry naming another
	// group than the one this repository already belongs to.
	ErrGroupMismatch = errors.New("repository belongs to another group")
)

// CorruptError names a message whose stored payload fails its checksum.
// It wraps ErrCorrupt.
type CorruptError struct {
	Source string
	Seq    uint64

	cause error // what the check found, for the message
}

func (e *CorruptError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("source %q message %d: %v", e.Source, e.Seq, e.cause)
	}
	return fmt.Sprintf("source %q message %d: %v", e.Source, e.Seq, ErrCorrupt)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }
