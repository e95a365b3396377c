package repository

import (
	"errors"
	"fmt"
	"slices"
)

// A Register creates a source's record before its publisher sends
// anything, and the record outlived the publisher: a client that
// registered a hundred thousand names and left made every store keep a
// hundred thousand empty sources for good, and could do it again. When
// the leader frees a silent publisher's source that holds nothing, it
// asks the group to forget it with ForgetSource, and every store drops the
// record whole, as if the name had never been registered.
//
// The apply rule decides, from the record alone, whether there is nothing
// to lose: no publisher session holds it (the one named in the command
// was the last, and it was freed), it holds no message and never held one
// (HighSeq 0: nothing published, released, declared unpublished or
// repaired into it), and no receiver has a position or registration
// recorded for it. Anything else and the entry changes nothing (Result.Err
// says why), so a leader that proposed it on a stale view loses nothing.
//
// It changes what the group holds, so it is not ignorable, and it is
// written only once the group's active format level includes it.
//
//	ForgetSource: [Source str, Session str]

// CmdForgetSource forgets a source that holds nothing.
const CmdForgetSource CommandType = 19

const forgetSourceFields = 2

// ForgetSource asks the group to forget Source, whose last publisher
// session Session was freed, if it holds nothing.
type ForgetSource struct {
	Source  string
	Session string
}

// ErrSourceNotEmpty is the Result.Err of a ForgetSource the group did not
// carry out: the source holds messages, a receiver's record, or a
// publisher session again.
var ErrSourceNotEmpty = errors.New("source holds something; not forgotten")

// EncodeForgetSource returns the replicated form of c.
func EncodeForgetSource(c ForgetSource) []byte {
	n := 1 + sizeArrayLen(forgetSourceFields) + sizeString(len(c.Source)) + sizeString(len(c.Session))
	b := make([]byte, 0, n)
	b = append(b, byte(CmdForgetSource))
	b = appendArrayLen(b, forgetSourceFields)
	b = appendString(b, c.Source)
	return appendString(b, c.Session)
}

func decodeForgetSource(r *mpReader) ForgetSource {
	var c ForgetSource
	expectFields(r, CmdForgetSource, forgetSourceFields)
	c.Source = r.str()
	c.Session = r.str()
	return c
}

// forgetSource deletes c's source if it holds nothing (see ForgetSource).
func (a *applier) forgetSource(c ForgetSource, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	if c.Session == "" {
		res.Err = fmt.Errorf("%w: ForgetSource of %q with an empty session", ErrBadCommand, c.Source)
		return nil
	}
	src, err := a.existingSource(c.Source)
	if err != nil || src == nil {
		return err // nothing to forget: an entry replayed, or a name never held
	}
	st := &src.state
	switch {
	case st.Session != "":
		res.Err = fmt.Errorf("%w: source %q is held by session %q", ErrSourceNotEmpty, c.Source, st.Session)
		return nil
	case st.ExpiredSession != c.Session:
		res.Err = fmt.Errorf("%w: source %q was last freed from session %q, not %q", ErrSourceNotEmpty, c.Source, st.ExpiredSession, c.Session)
		return nil
	case st.HighSeq != 0 || st.Count != 0 || st.TrimmedThrough != 0 || len(st.Unpublished) != 0:
		res.Err = fmt.Errorf("%w: source %q has held messages (highest %d)", ErrSourceNotEmpty, c.Source, st.HighSeq)
		return nil
	}
	if rb := src.b.Bucket(bucketReceivers); rb != nil {
		if k, _ := rb.Cursor().First(); k != nil {
			res.Err = fmt.Errorf("%w: source %q has receivers' records", ErrSourceNotEmpty, c.Source)
			return nil
		}
	}
	if err := a.sources.DeleteBucket([]byte(c.Source)); err != nil {
		return fmt.Errorf("forget source %q: %w", c.Source, err)
	}
	delete(a.open, c.Source)
	a.order = slices.DeleteFunc(a.order, func(o *openSource) bool { return o == src })
	return nil
}
