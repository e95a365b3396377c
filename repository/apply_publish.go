package repository

import (
	"bytes"
	"fmt"
)

// publishAs applies a Publish only if its session still holds the source.
func (a *applier) publishAs(c PublishAs, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	src, err := a.existingSource(c.Source)
	if err != nil {
		return err
	}
	if src != nil && src.state.Session != c.Session {
		res.Err = fmt.Errorf("%w: source %q is held by session %q, not %q (expired or replaced): messages from %d refused", ErrStaleSession, c.Source, src.state.Session, c.Session, c.FirstSeq)
		return nil
	}
	return a.publish(c.Publish, res)
}

// publish stores the messages of c the source does not hold yet, in runs,
// and counts the others: duplicates (conflicting or not), and those below
// retention (PublishResult).
func (a *applier) publish(c Publish, res *Result) error {
	if err := checkPublish(c); err != nil {
		res.Err = err
		return nil
	}
	crcs, err := a.publishChecksums(c)
	if err != nil {
		return err
	}
	n := uint64(len(c.Payloads))
	src, _, err := a.source(c.Source)
	if err != nil {
		return err
	}
	pr := &PublishResult{Source: c.Source, FirstSeq: c.FirstSeq, LastSeq: c.FirstSeq + n - 1}
	// c.Payloads[run:i] are newly stored and not Put yet: they go into the
	// store as one run (or several, past maxRunSize) when a message that is
	// not stored, or the end of the command, ends them.
	run := 0
	var held *msgCursor // for the duplicates' conflict check; nil after a Put, which invalidates it
	for i, p := range c.Payloads {
		seq := c.FirstSeq + uint64(i)
		// At or below TrimmedThrough, a message was released by retention:
		// admit would take it for a duplicate (it is neither held nor in a
		// gap), but it is reported apart and never compared with a held
		// payload.
		if seq > src.state.TrimmedThrough {
			store, gap := src.state.admit(seq, len(p))
			if gap != nil {
				pr.NewGap = gap
			}
			if store {
				pr.Stored++
				continue
			}
		}
		if i > run {
			if err := a.putRuns(src.msgs, c.FirstSeq+uint64(run), c.Payloads[run:i], crcs[run:i], a.index, run); err != nil {
				return fmt.Errorf("source %q: %w", c.Source, err)
			}
			held = nil
		}
		run = i + 1
		if seq <= src.state.TrimmedThrough {
			pr.BelowRetention++
			if !src.state.heldReleased(seq) {
				pr.addLost(seq)
			}
			continue
		}
		pr.Duplicates++
		// A held sequence number is never overwritten; a different payload
		// for it means a sequence number was reused (or a repair copied from
		// an inconsistent group): report it. Held messages are compared by
		// their CRC, so that apply never reads the log nor depends on
		// damage at rest; a legacy run has none, its payload is compared.
		if held == nil {
			held = newMsgCursor(src.msgs)
			held.lazy = true
		}
		got, ok, err := held.at(seq)
		if err != nil {
			return fmt.Errorf("source %q: %w", c.Source, err)
		}
		if !ok {
			continue
		}
		differs := false
		if sum, known := held.crc(); known {
			differs = sum != crcs[i]
		} else {
			differs = !bytes.Equal(got, p)
		}
		if differs {
			if pr.Conflicts == 0 {
				pr.FirstConflict = seq
			}
			pr.Conflicts++
		} else if a.repo != nil && a.repo.isDamaged(c.Source, seq) {
			if err := a.heal(src.msgs, seq, p, crcs[i]); err != nil {
				return fmt.Errorf("source %q: heal message %d: %w", c.Source, seq, err)
			}
			a.healed = append(a.healed, damagedKey{c.Source, seq})
			held = nil
		}
	}
	if run < len(c.Payloads) {
		if err := a.putRuns(src.msgs, c.FirstSeq+uint64(run), c.Payloads[run:], crcs[run:], a.index, run); err != nil {
			return fmt.Errorf("source %q: %w", c.Source, err)
		}
	}
	pr.HighSeq = src.state.HighSeq
	res.Publish = pr
	return nil
}

// checkPublish returns why c is refused as a whole (a Result.Err), or nil.
func checkPublish(c Publish) error {
	if err := validSourceName(c.Source); err != nil {
		return err
	}
	n := uint64(len(c.Payloads))
	switch {
	case c.FirstSeq == 0:
		return fmt.Errorf("%w: Publish on %q starts at sequence number 0; sequence numbers start at 1", ErrBadCommand, c.Source)
	case n == 0:
		return fmt.Errorf("%w: Publish on %q carries no message", ErrBadCommand, c.Source)
	case c.FirstSeq > MaxSeq || n-1 > MaxSeq-c.FirstSeq:
		return fmt.Errorf("%w: %w: Publish on %q of %d messages from %d goes past %d", ErrBadCommand, ErrSeqCeiling, c.Source, n, c.FirstSeq, uint64(MaxSeq))
	}
	for _, p := range c.Payloads {
		if len(p) > maxPayloadSize {
			return fmt.Errorf("%w: message of %d bytes on %q is too large", ErrBadCommand, len(p), c.Source)
		}
	}
	return nil
}

// publishChecksums returns the CRC32C of each of c's payloads, which every
// stored message keeps. One carried by the entry must match its payload: a
// mismatch means the entry was damaged after it was checked on receipt (in
// this store's log, or its memory), so this store stops rather than store
// something its peers do not.
func (a *applier) publishChecksums(c Publish) ([]uint32, error) {
	crcs := make([]uint32, len(c.Payloads))
	for i, p := range c.Payloads {
		crcs[i] = Checksum(p)
		if len(c.Checksums) > 0 && c.Checksums[i] != crcs[i] {
			return nil, fmt.Errorf("%w: raft log entry %d: message %d of source %q does not match the checksum it carries; this store's copy of the entry is damaged", ErrCorrupt, a.index, c.FirstSeq+uint64(i), c.Source)
		}
	}
	return crcs, nil
}
