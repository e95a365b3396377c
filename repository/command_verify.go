package repository

import "fmt"

// VerifyEntry checks a raft log entry's command against the checksums it
// carries, without applying it: a Publish that carries them (a publisher
// computed them before sending) must have every payload match. It returns
// an error wrapping ErrEntryDamaged, naming the first message that does
// not match, when the entry's bytes changed since they were checked on
// receipt (in a log file, in memory, on the network); nil for an intact
// entry and for every entry that carries no checksums. A command that does
// not decode is left to Apply, which reports it as it always has: only a
// checksum proves damage, and refusing to replicate an entry that is not
// damaged would stop a group.
//
// The raft port calls it on every entry a member sends or receives
// (storegroup's entrycheck.go), so it decodes only the Publish commands.
func VerifyEntry(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch CommandType(data[0]) {
	case CmdPublishChecksums, CmdPublishAsChecksums, CmdPublishKeyed:
	default:
		return nil
	}
	cmd, err := DecodeCommand(data)
	if err != nil {
		return nil
	}
	var c Publish
	switch v := cmd.(type) {
	case Publish:
		c = v
	case PublishAs:
		c = v.Publish
	default:
		return nil
	}
	if len(c.Checksums) != len(c.Payloads) {
		return nil // no checksums (a keyed Publish without them), or a count Apply refuses
	}
	for i, p := range c.Payloads {
		if Checksum(p) != c.Checksums[i] {
			return fmt.Errorf("%w: message %d of source %q", ErrEntryDamaged, c.FirstSeq+uint64(i), c.Source)
		}
	}
	return nil
}
