// Package formats describes the formats a umstore binary reads and writes,
// for the commands' --version: the repository's on-disk layout, the
// snapshot stream stores send each other, the client protocol and the
// replicated command types. Before a rolling upgrade an operator compares
// what the new binary writes with what the old one reads.
package formats

import (
	"fmt"
	"strings"

	"umstore/repository"
	"umstore/wire"
)

// Lines describes the formats, one per line, without a trailing newline.
func Lines() []string {
	var cmds []string
	for _, t := range repository.KnownCommands() {
		cmds = append(cmds, fmt.Sprintf("%d %s", byte(t), t))
	}
	return []string{
		levelLine(),
		fmt.Sprintf("repository format: writes %d, reads %d to %d", repository.FormatVersion, repository.OldestFormatVersion, repository.FormatVersion),
		fmt.Sprintf("snapshot stream: writes %s, reads %s", repository.SnapshotStreamWritten, strings.Join(repository.SnapshotStreamsRead(), " ")),
		fmt.Sprintf("client protocol: version %d", wire.Version),
		"command types: " + strings.Join(cmds, ", "),
	}
}

// String is Lines joined, each line ended by a newline: what --version
// prints after its first line.
func String() string {
	return strings.Join(Lines(), "\n") + "\n"
}

// levelLine names the binary's format level and the releases whose
// binaries it can run beside in one group until the group's level is
// raised (docs/operations.md, "Upgrading").
func levelLine() string {
	var ls []string
	for _, l := range repository.Levels() {
		ls = append(ls, fmt.Sprintf("%d (%s)", l.Level, l.Release))
	}
	return fmt.Sprintf("format level: %d; reads levels %s", repository.FormatLevel, strings.Join(ls, ", "))
}
