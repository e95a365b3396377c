package repository

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Format levels: what a binary reads, as one number a group can agree on.
//
// A store of an older binary stops on the first entry it cannot read (SPEC
// §4 rule 6), and refuses a snapshot stream with a record it does not know.
// So a binary writes what is new only once every store of its group reads
// it. Each binary has a format level, FormatLevel: the newest row of
// levels whose formats it reads. Each group has an active level, recorded
// through its log by ActiveLevel entries: the leader raises it once every
// member of the group's configuration announced a format level at least
// as high (storegroup/levels.go), and nothing ever lowers it. Every
// command type and snapshot record new since level 1 is written only at an
// active level that includes it (Gate); below it the request falls back to
// what the older level writes for it, or is withheld, or refused.
//
// Until a group's level is raised, its stores may go back to the binary of
// the lower level (a downgrade): nothing in its log or snapshots needs the
// newer binary. Once raised, they may not.

// FormatLevel is the format level of this binary: it reads every format
// of levels up to this one.
const FormatLevel = 2

// Level describes one format level: the release that first read it and
// what it adds to the level before it.
type Level struct {
	Level   int
	Release string // the first release whose binary reads it
	Adds    string // what a binary writes only once a group is at this level
}

// levels is the table of format levels, oldest first; row i is level i+1.
// A row is never changed once released.
var levels = []Level{
	{Level: 1, Release: "v0.1.0", Adds: "command types 1-15, snapshot stream UMSNAP02 (records g p m s), repository format 3"},
	{Level: 2, Release: "unreleased", Adds: "command types 16 PublishKeyed, 17 Unpublished, 18 ActiveLevel, 19 ForgetSource; snapshot record l (the active level)"},
}

// Levels returns the table of format levels this binary knows, oldest
// first.
func Levels() []Level { return append([]Level(nil), levels...) }

// introducedAt is, by command type (IgnorableFlag cleared), the format
// level that added it; 0 for the types of level 1.
var introducedAt = map[CommandType]int{
	CmdPublishKeyed: 2,
	CmdUnpublished:  2,
	CmdActiveLevel:  2,
	CmdForgetSource: 2,
}

// IntroducedAt returns the format level that added command type t (its
// IgnorableFlag ignored): 1 for the types every release reads.
func IntroducedAt(t CommandType) int {
	if l := introducedAt[t&^IgnorableFlag]; l > 0 {
		return l
	}
	return 1
}

// ErrLevelNotActive refuses to write a command of a format level the group
// has not reached: a store of its group still runs a binary that cannot
// read it. Finish the upgrade (every store on the new binary); the leader
// then raises the group's level and the command is written.
var ErrLevelNotActive = errors.New("format level not active in the group")

// Gate refuses cmd, wrapping ErrLevelNotActive, when its type is newer
// than the group's active level (level, asked only for such types: most
// commands are of level 1, and the data path never pays for the lookup).
// ActiveLevel entries pass: raising the level is the one write the leader
// checks against every member's announced level instead.
func Gate(cmd []byte, level func() int) error {
	if len(cmd) == 0 {
		return nil
	}
	t := CommandType(cmd[0]) &^ IgnorableFlag
	need := IntroducedAt(t)
	if need <= 1 || t == CmdActiveLevel {
		return nil
	}
	if have := level(); have < need {
		return fmt.Errorf("%w: %v needs level %d, the group is at level %d: a store of the group still runs a binary older than level %d (see `umstored status`); finish the upgrade", ErrLevelNotActive, t, need, have, need)
	}
	return nil
}

// The ActiveLevel command: the leader's record that every member reads
// formats up to Level.
//
//	ActiveLevel: [Level uint]
//
// It carries IgnorableFlag, so a store of level 1 (which knows no such
// type) skips it; such a store is never a member when it is written, but
// may have been one a moment before, or run an old copy of the log.

// CmdActiveLevel records that a group's active format level rose.
const CmdActiveLevel CommandType = 18

const activeLevelFields = 1

// ActiveLevel raises a group's active format level to Level.
type ActiveLevel struct {
	Level uint64
}

// EncodeActiveLevel returns the replicated form of c, marked ignorable.
func EncodeActiveLevel(c ActiveLevel) []byte {
	b := make([]byte, 0, 1+sizeArrayLen(activeLevelFields)+sizeUint(c.Level))
	b = append(b, byte(CmdActiveLevel|IgnorableFlag))
	b = appendArrayLen(b, activeLevelFields)
	return appendUint(b, c.Level)
}

func decodeActiveLevel(r *mpReader) ActiveLevel {
	var c ActiveLevel
	expectFields(r, CmdActiveLevel, activeLevelFields)
	c.Level = r.uint()
	return c
}

// keyActiveLevel holds, in meta, the group's active level once raised
// above 1; absent means 1.
var keyActiveLevel = []byte("active-level")

// activeLevel raises the recorded level to c.Level; a lower or equal one
// changes nothing (the level never goes down). A level above this
// binary's stops the store: it would write, and read from its peers,
// formats it does not know.
func (a *applier) activeLevel(c ActiveLevel, res *Result) error {
	if c.Level == 0 {
		res.Err = fmt.Errorf("%w: ActiveLevel 0", ErrBadCommand)
		return nil
	}
	if c.Level > FormatLevel {
		return &unknownCommandError{index: a.index, err: fmt.Errorf("%w: the group's active format level is %d, this binary reads up to %d", ErrUnknownCommand, c.Level, FormatLevel)}
	}
	if c.Level <= uint64(readActiveLevel(a.meta)) {
		return nil
	}
	return a.meta.Put(keyActiveLevel, u64(c.Level))
}

// readActiveLevel returns the level recorded in meta, 1 when none is.
func readActiveLevel(meta *bolt.Bucket) int {
	if l := getU64(meta, keyActiveLevel); l > 1 {
		return int(l)
	}
	return 1
}

// ActiveLevel returns the group's active format level as this store
// applied it: 1 until an ActiveLevel entry raised it.
func (r *Repo) ActiveLevel() (int, error) {
	level := 1
	err := r.view(func(tx *bolt.Tx) error {
		level = readActiveLevel(tx.Bucket(bucketMeta))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the active level of %s: %w", r.path, err)
	}
	return level, nil
}

// digestLevel adds the active level to a digest, only when it was raised,
// so that a repository of level 1 digests as it did before levels existed.
func digestLevel(d *digester, meta *bolt.Bucket) {
	if l := readActiveLevel(meta); l > 1 {
		d.str("active-level")
		d.u64(uint64(l))
	}
}
