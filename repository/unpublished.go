package repository

import (
	"fmt"
	"sort"
)

// A publisher that resumes past numbers it never sent (its state file
// said to, or a group that did not answer may hold what an earlier
// incarnation sent: publisher/resume.go) leaves those numbers unused. To
// the groups they look like a gap, and a receiver would report them as
// loss for good. Unpublished is the publisher's word for them: "from
// From to To, this source has nothing of mine unless a group holds it".
// The group records the range (clipped to what retention kept) beside its
// gaps: a number in it that the group does not hold is reported as never
// published, not as a gap, and is still filled, like any gap, by a
// publish or a repair that brings it (a group that did not answer may
// hold one).
//
// It is an advisory record: the entry carries IgnorableFlag, so a store
// older than it skips the entry (and reports the range as a gap, as
// before), and nothing it records changes what Publish, Trim or any other
// command stores or answers.
//
//	Unpublished: [Source str, Session str, From uint, To uint]

// CmdUnpublished records a range of a source its publisher never used.
const CmdUnpublished CommandType = 17

const unpublishedFields = 4

// maxUnpublished bounds the unpublished ranges a source's state keeps:
// each is one publisher restart, and the oldest are dropped first.
const maxUnpublished = 64

// Unpublished says that the publisher session Session of Source never
// published the numbers From..To (inclusive).
type Unpublished struct {
	Source   string
	Session  string
	From, To uint64
}

// EncodeUnpublished returns the replicated form of c, marked ignorable.
func EncodeUnpublished(c Unpublished) []byte {
	n := 1 + sizeArrayLen(unpublishedFields) + sizeString(len(c.Source)) + sizeString(len(c.Session)) + sizeUint(c.From) + sizeUint(c.To)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdUnpublished|IgnorableFlag))
	b = appendArrayLen(b, unpublishedFields)
	b = appendString(b, c.Source)
	b = appendString(b, c.Session)
	b = appendUint(b, c.From)
	return appendUint(b, c.To)
}

func decodeUnpublished(r *mpReader) Unpublished {
	var c Unpublished
	expectFields(r, CmdUnpublished, unpublishedFields)
	c.Source = r.str()
	c.Session = r.str()
	c.From = r.uint()
	c.To = r.uint()
	return c
}

// unpublished records c's range for its source, if c's session still
// holds the source: a late record of a replaced publisher says nothing of
// the new one's numbers.
func (a *applier) unpublished(c Unpublished, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	if c.From == 0 || c.To < c.From || c.To > MaxSeq {
		res.Err = fmt.Errorf("%w: Unpublished %d-%d of %q: want 1 <= From <= To <= %d", ErrBadCommand, c.From, c.To, c.Source, uint64(MaxSeq))
		return nil
	}
	src, err := a.existingSource(c.Source)
	if err != nil {
		return err
	}
	if src == nil {
		res.Err = fmt.Errorf("%w %q: Unpublished %d-%d; only sources the group holds are recorded", ErrUnknownSource, c.Source, c.From, c.To)
		return nil
	}
	if src.state.Session != c.Session {
		res.Err = fmt.Errorf("%w: source %q is held by session %q, not %q: its unpublished range %d-%d is not recorded", ErrStaleSession, c.Source, src.state.Session, c.Session, c.From, c.To)
		return nil
	}
	src.state.addUnpublished(Range{From: c.From, To: c.To})
	return nil
}

// addUnpublished records g (clipped above TrimmedThrough), merging it with
// the ranges it overlaps or touches, and drops the oldest past
// maxUnpublished.
func (s *sourceState) addUnpublished(g Range) {
	g.From = max(g.From, s.TrimmedThrough+1)
	if g.From > g.To {
		return
	}
	rs := append(s.Unpublished, g)
	sort.Slice(rs, func(i, j int) bool { return rs[i].From < rs[j].From })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.From <= last.To+1 {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	if len(out) > maxUnpublished {
		out = out[len(out)-maxUnpublished:]
	}
	s.Unpublished = out
}

// releaseUnpublished forgets what retention released: numbers at or below
// through are released, whatever else they were.
func (s *sourceState) releaseUnpublished(through uint64) {
	out := s.Unpublished[:0]
	for _, r := range s.Unpublished {
		if r.To <= through {
			continue
		}
		r.From = max(r.From, through+1)
		out = append(out, r)
	}
	if len(out) == 0 {
		out = nil
	}
	s.Unpublished = out
}

// checkUnpublished refuses a record this code could not have written.
func (s *sourceState) checkUnpublished() error {
	if len(s.Unpublished) > maxUnpublished {
		return fmt.Errorf("%d unpublished ranges, at most %d are kept", len(s.Unpublished), maxUnpublished)
	}
	low := s.TrimmedThrough
	for _, g := range s.Unpublished {
		if g.From <= low || g.To < g.From {
			return fmt.Errorf("unpublished range %v out of order or at or below %d", g, low)
		}
		low = g.To
	}
	return nil
}

// unpublishedGaps returns the parts of the gaps that lie in an unpublished
// range: numbers the group does not hold and the publisher never used.
func (s *sourceState) unpublishedGaps() []Range {
	var out []Range
	for _, g := range s.Gaps {
		for _, u := range s.Unpublished {
			from, to := max(g.From, u.From), min(g.To, u.To)
			if from <= to {
				out = append(out, Range{From: from, To: to})
			}
		}
	}
	return out
}
