package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// payloadHash is the short hash the history keeps of a payload.
func payloadHash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// payloadInfo is what a chaos payload says about itself.
type payloadInfo struct {
	Source      string
	Seq         uint64
	Incarnation int
}

// makePayload builds the payload of one message: it names the source, the
// sequence number and the publisher incarnation, so two incarnations never
// send the same bytes for one sequence number, and a checksum of those and
// of its length, padded to size bytes. The payload verifies itself (see
// payloadDamage): whoever reads it can tell, without knowing whether it was
// acknowledged, that it left its publisher as it is.
func makePayload(source string, seq uint64, inc, size int) []byte {
	s := fmt.Sprintf("chaos source=%s seq=%d inc=%d sum=%016x ", source, seq, inc, payloadSum(source, seq, inc, size))
	if len(s) < size {
		s += strings.Repeat(".", size-len(s))
	}
	return []byte(s)
}

// payloadSum is the checksum a payload carries: of its source, sequence
// number, incarnation and length (the padding follows from the length).
func payloadSum(source string, seq uint64, inc, size int) uint64 {
	s := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d", source, seq, inc, size))
	return binary.BigEndian.Uint64(s[:8])
}

// parsePayload reads back what makePayload wrote (without verifying it).
func parsePayload(b []byte) (payloadInfo, bool) {
	var p payloadInfo
	s := strings.TrimRight(string(b), ".")
	if _, err := fmt.Sscanf(s, "chaos source=%s seq=%d inc=%d", &p.Source, &p.Seq, &p.Incarnation); err != nil {
		return payloadInfo{}, false
	}
	return p, true
}

// The kinds of damage payloadDamage reports. A stranger's payload is told
// apart from a damaged one: the first breaks the stranger rule, the others
// the integrity rule.
const (
	damageStranger  = "stranger"  // a payload the stranger sent
	damageChecksum  = "checksum"  // a chaos payload whose bytes no longer match its checksum
	damageMisplaced = "misplaced" // an intact payload of another source or sequence number
	damageForeign   = "foreign"   // not a chaos payload at all
)

// payloadDamage says whether payload, handed to a receiver as sequence
// number seq of source, is exactly what a chaos publisher would have sent
// for it: "" when it is, else one of the damage kinds above followed by
// what was found.
func payloadDamage(source string, seq uint64, payload []byte) string {
	if bytes.HasPrefix(payload, []byte(strangerMarker)) {
		return damageStranger
	}
	p, ok := parsePayload(payload)
	if !ok {
		if bytes.HasPrefix(payload, []byte("chaos ")) {
			return damageChecksum + ": its header no longer parses"
		}
		return damageForeign
	}
	if !bytes.Equal(payload, makePayload(p.Source, p.Seq, p.Incarnation, len(payload))) {
		return damageChecksum + fmt.Sprintf(": %d bytes that do not match their checksum", len(payload))
	}
	if p.Source != source || p.Seq != seq {
		return damageMisplaced + fmt.Sprintf(": it is source %s seq %d's", p.Source, p.Seq)
	}
	return ""
}
