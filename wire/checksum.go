package wire

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// Checksums end to end. The publisher computes a CRC32C (Castagnoli) of
// each payload and sends it with the payload (Publish.Checksums); the store
// that receives the frame checks every one before it proposes anything and
// refuses a damaged frame with CodeChecksum; stores keep the checksum with
// the payload and send it with every message they serve (Msg.CRC); the
// receiver checks it again before it hands a message to the application.
//
// A checksum of 0 means "not known": the field is absent in frames of
// peers older than checksums, and a payload whose CRC32C happens to be 0 is
// simply not checked. Nothing else treats 0 specially.

// castagnoli is the CRC32C table (hardware-accelerated where the CPU has
// the instruction).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC32C (Castagnoli) of payload: the checksum a
// publisher sends with a message and a store keeps with it.
func Checksum(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

// ErrChecksum means a payload does not match the checksum sent or stored
// with it: it was damaged on its way or at rest. The error is a
// *ChecksumError naming the message.
var ErrChecksum = errors.New("payload does not match its checksum")

// ChecksumError names the message whose payload failed its checksum. It
// wraps ErrChecksum.
type ChecksumError struct {
	Source string
	Seq    uint64
	Want   uint32 // the checksum sent with the payload
	Got    uint32 // the checksum of the payload as received
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("source %q message %d: %v (sent %08x, received payload has %08x)", e.Source, e.Seq, ErrChecksum, e.Want, e.Got)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// CheckShape refuses a Publish whose Checksums, when present, do not pair
// one to one with its Payloads: a malformed request (CodeBadRequest).
func (p *Publish) CheckShape() error {
	if len(p.Checksums) != 0 && len(p.Checksums) != len(p.Payloads) {
		return fmt.Errorf("a publish of %d messages carries %d checksums: send one per message, or none", len(p.Payloads), len(p.Checksums))
	}
	return nil
}

// VerifyChecksums checks every payload of p against the checksum sent with
// it. It returns nil when p carries no checksums (an older publisher), and
// a *ChecksumError for the first damaged payload otherwise. A frame whose
// checksums do not pair with its payloads fails CheckShape, and here too.
func (p *Publish) VerifyChecksums() error {
	if len(p.Checksums) == 0 {
		return nil
	}
	if err := p.CheckShape(); err != nil {
		return err
	}
	for i, b := range p.Payloads {
		if got := Checksum(b); got != p.Checksums[i] {
			return &ChecksumError{Source: p.Source, Seq: p.FirstSeq + uint64(i), Want: p.Checksums[i], Got: got}
		}
	}
	return nil
}

// Intact reports whether m's payload matches the checksum it came with, or
// it came without one (CRC 0: a store older than checksums). A receiver
// never hands a message that is not intact to its application.
func (m Msg) Intact() bool { return m.CRC == 0 || Checksum(m.Payload) == m.CRC }

// Verified reports whether m came with a checksum and its payload matches
// it: what a store demands of a copy it repairs from.
func (m Msg) Verified() bool { return m.CRC != 0 && Checksum(m.Payload) == m.CRC }
