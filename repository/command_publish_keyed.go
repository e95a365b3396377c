package repository

import (
	"fmt"
	"strings"
)

// The keyed Publish body: how Publish grows a field without a new command
// type. See DESIGN.md ("Growing Publish") for why it is shaped this way.
//
// The four positional Publish types (Publish, PublishAs, PublishChecksums,
// PublishAsChecksums) are the 2x2 of session x checksums: with the rule "a
// new field means a new type", every further field would double them.
// CmdPublishKeyed carries any of the four in one body, a msgpack map whose
// optional fields are present only when they say something:
//
//	PublishKeyed: {"src": Source str, "seq": FirstSeq uint, "sess": Session str,
//	               "msgs": Payloads [bin, ...], "crc": Checksums bin}
//
// "src", "seq" and "msgs" are required. "sess" makes the entry a PublishAs
// (its presence does, even with an empty session, as CmdPublishAs does); it
// is absent for a plain Publish. "crc" is as in PublishChecksums, absent when
// the publisher sent no checksums. The encoder writes the keys in that order;
// the decoder takes them in any order, but refuses a key twice, an empty
// key, a missing required key, "sess" or "crc" present as nil, and trailing
// bytes (ErrBadCommand: every store refuses the same entry the same way).
//
// A key the decoder does not know follows the unknown-field rule:
//
//   - A key that starts with "_" is advisory: its value (any msgpack value)
//     changes nothing any store records or answers (a trace id, a note).
//     A store that does not know it skips it. A new binary must never let
//     an advisory field change what Apply does (if it matters, it is not
//     advisory), nor refuse an entry over an advisory value it cannot
//     interpret: a store that skips it would apply the entry. Only a value
//     that is not msgpack at all makes the body malformed, for every store
//     alike.
//   - Any other key is essential. A store that does not know it cannot
//     apply the entry as its upgraded peers do, and must not apply it
//     without the field (that would silently drop what the field says), nor
//     refuse it as malformed (that would count the entry as applied and
//     lose its messages): decoding fails with ErrUnknownField and Apply
//     stops the store, as for an unknown command type, whatever the type
//     byte's IgnorableFlag says. The operator upgrades it, and it resumes
//     from the same entry.
//
// So a future Publish field is one more key: a field of Publish, decoded when
// present, encoded only when it is not empty, so entries that do not use it
// stay byte-identical and readable by every store that knows
// CmdPublishKeyed. Proposers start sending an essential field only once
// every store of the group runs a binary that knows it.
//
// No proposer writes CmdPublishKeyed yet: EncodePublish and EncodePublishAs
// still write the four positional types, byte for byte, because a store
// older than this type would stop at the first keyed entry. It is of format
// level 2 (level.go): a proposer that writes it passes the level gate, so it
// reaches only groups whose every store reads it, and falls back to the
// positional types, which carry the same request, below. Until one does,
// this body is decoded, applied and pinned by its golden samples only.
const CmdPublishKeyed CommandType = 16

// Keys of the keyed Publish body. They are pinned, like the positional
// layouts: a key never changes meaning.
const (
	pkSource    = "src"
	pkFirstSeq  = "seq"
	pkSession   = "sess"
	pkPayloads  = "msgs"
	pkChecksums = "crc"
)

// advisoryKeyPrefix starts the keys a store may skip without knowing them.
const advisoryKeyPrefix = "_"

// unknownFieldError is the decode failure of a keyed body carrying an
// essential key this version does not know; DecodeCommand turns it into an
// error wrapping ErrUnknownField.
type unknownFieldError struct{ key string }

func (e *unknownFieldError) Error() string { return fmt.Sprintf("unknown essential field %q", e.key) }

// encodePublishKeyed returns c as a CmdPublishKeyed entry: a PublishAs (with
// "sess") when as is set, else a Publish. Nothing proposes it yet (see
// CmdPublishKeyed); the tests pin it.
func encodePublishKeyed(c Publish, session string, as bool) []byte {
	fields := 3
	n := 1 + sizeString(len(pkSource)) + sizeString(len(c.Source)) +
		sizeString(len(pkFirstSeq)) + sizeUint(c.FirstSeq) +
		sizeString(len(pkPayloads)) + sizePayloads(c.Payloads)
	if as {
		fields++
		n += sizeString(len(pkSession)) + sizeString(len(session))
	}
	if len(c.Checksums) > 0 {
		fields++
		n += sizeString(len(pkChecksums)) + sizeBin(4*len(c.Checksums))
	}
	n += sizeMapLen(fields)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdPublishKeyed))
	b = appendMapLen(b, fields)
	b = appendString(appendString(b, pkSource), c.Source)
	b = appendUint(appendString(b, pkFirstSeq), c.FirstSeq)
	if as {
		b = appendString(appendString(b, pkSession), session)
	}
	b = appendPayloads(appendString(b, pkPayloads), c.Payloads)
	if len(c.Checksums) > 0 {
		b = appendChecksums(appendString(b, pkChecksums), c.Checksums)
	}
	return b
}

// decodePublishKeyed reads a keyed Publish body: a Publish, or a PublishAs
// when it carries "sess".
func decodePublishKeyed(r *mpReader) any {
	var (
		c    PublishAs
		seen = make(map[string]bool, 5) // known keys only; never iterated
		sums []byte
	)
	n := r.mapLen()
	for range n {
		key := r.str()
		switch {
		case r.err != nil:
			return nil
		case key == "":
			r.fail("PublishKeyed body has an empty key")
			return nil
		case seen[key]:
			r.fail("PublishKeyed body has key %q twice", key)
			return nil
		}
		switch key {
		case pkSource:
			c.Source = r.str()
		case pkFirstSeq:
			c.FirstSeq = r.uint()
		case pkSession:
			notNil(r, key)
			c.Session = r.str()
		case pkPayloads:
			c.Payloads = readPayloads(r)
		case pkChecksums:
			notNil(r, key)
			sums = r.raw()
		default:
			if strings.HasPrefix(key, advisoryKeyPrefix) {
				r.skip()
				continue
			}
			if r.err == nil {
				r.err = &unknownFieldError{key: key}
			}
			return nil
		}
		seen[key] = true
	}
	for _, k := range []string{pkSource, pkFirstSeq, pkPayloads} {
		if r.err == nil && !seen[k] {
			r.fail("PublishKeyed body has no %q", k)
		}
	}
	if seen[pkChecksums] {
		c.Checksums = checksumsOf(r, sums, len(c.Payloads))
	}
	if r.err != nil {
		return nil
	}
	if seen[pkSession] {
		return c
	}
	return c.Publish
}

// notNil fails on a nil value for key: an optional field is either present
// with a value or absent, never present as nil (which msgpack libraries
// read as absent).
func notNil(r *mpReader, key string) {
	if r.err == nil && r.remaining() > 0 && r.b[r.off] == mpNil {
		r.fail("PublishKeyed body has %q as nil", key)
	}
}

// publishKeyed applies a keyed Publish body as the positional type it
// stands for.
func (a *applier) publishKeyed(cmd any, res *Result) error {
	switch c := cmd.(type) {
	case PublishAs:
		return a.publishAs(c, res)
	case Publish:
		return a.publish(c, res)
	}
	return fmt.Errorf("internal error: a PublishKeyed body decoded to %T", cmd)
}
