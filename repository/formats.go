package repository

// The formats this binary reads and writes, exported for --version (see
// internal/formats): an operator about to upgrade one host of a group asks
// each binary what it writes and what it reads before mixing them.

// OldestFormatVersion is the oldest on-disk layout version this binary
// reads; FormatVersion is the one it writes.
const OldestFormatVersion = oldestFormatVersion

// SnapshotStreamWritten is the magic of the snapshot stream this binary
// writes (a leader sends it to a member too far behind for the log).
const SnapshotStreamWritten = streamMagic2

// SnapshotStreamsRead lists the magics of the snapshot streams this binary
// restores, newest first: the one it writes, the stream of earlier versions,
// and a stream staged on disk by an earlier restart.
func SnapshotStreamsRead() []string {
	return []string{streamMagic2, streamMagic, stagedMagic}
}

// KnownCommands lists, in number order, the command types this binary
// decodes and applies: exactly the rows of its command table. A log entry of
// any other type stops a store unless it is marked IgnorableFlag.
func KnownCommands() []CommandType {
	var known []CommandType
	for i := range commands {
		if commands[i].known() {
			known = append(known, CommandType(i))
		}
	}
	return known
}
