package repository

import (
	"encoding/binary"
	"math"
)

// Publish carries consecutive messages of one source: Payloads[i] has sequence
// number FirstSeq+i. Packing many messages into one entry is how the group
// amortises raft's per-entry cost.
type Publish struct {
	Source   string
	FirstSeq uint64
	Payloads [][]byte
	// Checksums, if not empty, holds the CRC32C (Castagnoli) of each
	// payload as the publisher computed it, in the same order.
	Checksums []uint32
}

// EncodePublish returns the replicated form of c: a CmdPublishChecksums
// when c carries Checksums (one per payload), else a CmdPublish. It is on
// the publishing hot path: it computes the exact size first and allocates
// once, copying each payload exactly once.
func EncodePublish(c Publish) []byte {
	if len(c.Checksums) > 0 {
		n := 1 + sizeArrayLen(publishSumsFields) + sizeString(len(c.Source)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads) + sizeBin(4*len(c.Checksums))
		b := make([]byte, 0, n)
		b = append(b, byte(CmdPublishChecksums))
		b = appendArrayLen(b, publishSumsFields)
		b = appendString(b, c.Source)
		b = appendUint(b, c.FirstSeq)
		b = appendPayloads(b, c.Payloads)
		return appendChecksums(b, c.Checksums)
	}
	n := 1 + sizeArrayLen(publishFields) + sizeString(len(c.Source)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPublish))
	b = appendArrayLen(b, publishFields)
	b = appendString(b, c.Source)
	b = appendUint(b, c.FirstSeq)
	return appendPayloads(b, c.Payloads)
}

// appendChecksums appends checksums as one bin of 4 big-endian bytes each.
func appendChecksums(b []byte, sums []uint32) []byte {
	n := 4 * len(sums)
	switch {
	case n <= math.MaxUint8:
		b = append(b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpBin16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpBin32), uint32(n))
	}
	for _, c := range sums {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return b
}

// readChecksums reads the Checksums bin of a command with n payloads.
func readChecksums(r *mpReader, n int) []uint32 {
	return checksumsOf(r, r.raw(), n)
}

// checksumsOf reads raw, a Checksums bin read from r, for n payloads.
func checksumsOf(r *mpReader, raw []byte, n int) []uint32 {
	if r.err != nil {
		return nil
	}
	if len(raw) != 4*n {
		r.fail("checksums of %d bytes for %d payloads, want 4 bytes each", len(raw), n)
		return nil
	}
	sums := make([]uint32, n)
	for i := range sums {
		sums[i] = binary.BigEndian.Uint32(raw[4*i:])
	}
	return sums
}

// sizePayloads and appendPayloads encode a Publish's payloads: an array of
// bin values.
func sizePayloads(payloads [][]byte) int {
	n := sizeArrayLen(len(payloads))
	for _, p := range payloads {
		n += sizeBin(len(p))
	}
	return n
}

func appendPayloads(b []byte, payloads [][]byte) []byte {
	b = appendArrayLen(b, len(payloads))
	for _, p := range payloads {
		b = appendBin(b, p)
	}
	return b
}

// PublishAs is Publish sent by the publisher session that registered the
// source. Applying it checks that the session still holds the source: the
// messages of a publisher whose session expired, or that another publisher
// replaced, arriving late (queued in a socket, or from a frozen leader) are
// refused rather than stored under sequence numbers the new publisher
// reuses.
//
//	PublishAs: [Source str, Session str, FirstSeq uint, Payloads [bin, ...]]
type PublishAs struct {
	Session string
	Publish
}

// EncodePublishAs returns the replicated form of c: a
// CmdPublishAsChecksums when c carries Checksums, else a CmdPublishAs.
func EncodePublishAs(c PublishAs) []byte {
	if len(c.Checksums) > 0 {
		n := 1 + sizeArrayLen(publishAsSumsFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads) + sizeBin(4*len(c.Checksums))
		b := make([]byte, 0, n)
		b = append(b, byte(CmdPublishAsChecksums))
		b = appendArrayLen(b, publishAsSumsFields)
		b = appendString(b, c.Source)
		b = appendString(b, c.Session)
		b = appendUint(b, c.FirstSeq)
		b = appendPayloads(b, c.Payloads)
		return appendChecksums(b, c.Checksums)
	}
	n := 1 + sizeArrayLen(publishAsFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(c.FirstSeq) + sizePayloads(c.Payloads)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPublishAs))
	b = appendArrayLen(b, publishAsFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	b = appendUint(b, c.FirstSeq)
	return appendPayloads(b, c.Payloads)
}

func decodePublishChecksums(r *mpReader) Publish {
	var c Publish
	expectFields(r, CmdPublishChecksums, publishSumsFields)
	c.Source = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	c.Checksums = readChecksums(r, len(c.Payloads))
	return c
}

func decodePublishAsChecksums(r *mpReader) PublishAs {
	var c PublishAs
	expectFields(r, CmdPublishAsChecksums, publishAsSumsFields)
	c.Source = r.str()
	c.Session = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	c.Checksums = readChecksums(r, len(c.Payloads))
	return c
}

func decodePublishAs(r *mpReader) PublishAs {
	var c PublishAs
	expectFields(r, CmdPublishAs, publishAsFields)
	c.Source = r.str()
	c.Session = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	return c
}

func decodePublish(r *mpReader) Publish {
	var c Publish
	expectFields(r, CmdPublish, publishFields)
	c.Source = r.str()
	c.FirstSeq = r.uint()
	c.Payloads = readPayloads(r)
	return c
}

// readPayloads reads a Publish's payloads; they point into the entry.
func readPayloads(r *mpReader) [][]byte {
	n := r.arrayLen()
	if r.err != nil {
		return nil
	}
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = r.raw()
	}
	return payloads
}
