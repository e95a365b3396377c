package repository

import (
	"fmt"
	"sort"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxSourceNameLen is the longest source name the group accepts, in bytes.
// It is part of the replicated rules (a longer name is a Result.Err on every
// store), so it never changes for a given command type. Clients should check
// it before proposing.
const MaxSourceNameLen = 255

// MaxSeq is the highest sequence number a source may hold: 2^53-1, the
// same number as wire.MaxSeq (why that number is said there). A Publish or
// PublishAs reaching above it is refused with ErrSeqCeiling on every store.
// Like MaxSourceNameLen it is part of the replicated rules and never
// changes. It was added after Publish and PublishAs were in use: a binary
// from before it stores such an entry where a newer one refuses it, so a
// group running both would diverge on one. No publisher ever sent one (it
// takes a forged or hostile write); upgrade every member of a group
// together.
const MaxSeq = 1<<53 - 1

// Range is an inclusive range of sequence numbers.
type Range struct {
	From, To uint64
}

// Len returns how many sequence numbers the range covers.
func (g Range) Len() uint64 { return g.To - g.From + 1 }

// String formats the range as "[from,to]".
func (g Range) String() string { return fmt.Sprintf("[%d,%d]", g.From, g.To) }

// sourceState is the bookkeeping of one source's repository. The messages
// held are exactly [TrimmedThrough+1, HighSeq] minus Gaps; the oldest of them
// is LowSeq. Gaps therefore lie above TrimmedThrough, and a sequence number
// at or below it is neither held nor in a gap: admit takes it for a
// duplicate, so retention holds even for code that ignores TrimmedThrough.
type sourceState struct {
	HighSeq        uint64
	LowSeq         uint64 // 0 while no message is held
	Count          uint64 // messages held
	Bytes          uint64 // payload bytes held
	Gaps           []Range
	Session        string // session of the last registration
	Created        int64  // UnixNano of the registration that created it; 0 if created by a Publish
	LastRegister   int64  // UnixNano of the last registration
	TrimmedThrough uint64 // highest Trim.Through applied (at most HighSeq); 0 if never trimmed
	// The last session an ExpireSession freed, and that command's UnixNano;
	// "" and 0 if none ever did.
	ExpiredSession  string
	ExpiredUnixNano int64
	// ReleasedGaps are the gaps retention released: the numbers at or
	// below TrimmedThrough the group never held, oldest first, at most
	// maxReleasedGaps of them. ReleasedFloor bounds what they say: for a
	// number at or below it the record was not kept (older gaps dropped
	// past the limit, or a state written before the record existed), so
	// whether the group held it is not known. Every other number at or
	// below TrimmedThrough was held until retention released it: a
	// publisher that sends it again (its Ack was lost on the way) is told
	// it was stable, not that it is lost.
	ReleasedGaps  []Range
	ReleasedFloor uint64
	// Unpublished are the ranges above TrimmedThrough its publishers
	// said they never used (unpublished.go), ascending, at most
	// maxUnpublished; they may overlap held numbers and gaps alike.
	Unpublished []Range
}

// maxReleasedGaps bounds the released gaps a source's state records: a
// publisher only sends again what it sent recently, so the newest are
// the ones that matter.
const maxReleasedGaps = 64

// storedState is sourceState as written to the file: a msgpack map with
// short keys, so fields can be added without a format change (absent keys
// decode as zero).
type storedState struct {
	HighSeq      uint64      `msgpack:"h,omitempty"`
	LowSeq       uint64      `msgpack:"l,omitempty"`
	Count        uint64      `msgpack:"n,omitempty"`
	Bytes        uint64      `msgpack:"b,omitempty"`
	Gaps         [][2]uint64 `msgpack:"g,omitempty"`
	Session      string      `msgpack:"s,omitempty"`
	Created      int64       `msgpack:"c,omitempty"`
	LastRegister int64       `msgpack:"r,omitempty"`
	// Added with Trim. Files written before it have no "t" key: never
	// trimmed. A binary from before it ignores the key (and would drop it
	// when it rewrites the state), see FormatVersion.
	TrimmedThrough uint64 `msgpack:"t,omitempty"`
	// Added with ExpireSession, the same way: files written before it have
	// no "es" and "et" keys, meaning no session ever expired.
	ExpiredSession  string `msgpack:"es,omitempty"`
	ExpiredUnixNano int64  `msgpack:"et,omitempty"`
	// Added with the released gaps: "rk" is written by a binary that keeps
	// them for every state that was ever trimmed, so a trimmed state
	// without it (written before, or by an older binary, which drops the
	// keys when it rewrites the state) has no record: its floor is its
	// TrimmedThrough. A state never trimmed needs none, and encodes as
	// before.
	ReleasedKept  bool        `msgpack:"rk,omitempty"`
	ReleasedGaps  [][2]uint64 `msgpack:"rg,omitempty"`
	ReleasedFloor uint64      `msgpack:"rf,omitempty"`
	// Added with Unpublished: absent, none recorded. A binary from before
	// it drops the key when it rewrites the state (the record is advisory).
	Unpublished [][2]uint64 `msgpack:"u,omitempty"`
}

func rangesOut(rs []Range) [][2]uint64 {
	if len(rs) == 0 {
		return nil
	}
	out := make([][2]uint64, len(rs))
	for i, g := range rs {
		out[i] = [2]uint64{g.From, g.To}
	}
	return out
}

func rangesIn(rs [][2]uint64) []Range {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Range, len(rs))
	for i, g := range rs {
		out[i] = Range{From: g[0], To: g[1]}
	}
	return out
}

func encodeState(s *sourceState) ([]byte, error) {
	st := storedState{
		HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Bytes: s.Bytes,
		Gaps:    rangesOut(s.Gaps),
		Session: s.Session, Created: s.Created, LastRegister: s.LastRegister,
		TrimmedThrough: s.TrimmedThrough,
		ExpiredSession: s.ExpiredSession, ExpiredUnixNano: s.ExpiredUnixNano,
		ReleasedKept: s.TrimmedThrough > 0, ReleasedGaps: rangesOut(s.ReleasedGaps), ReleasedFloor: s.ReleasedFloor,
		Unpublished: rangesOut(s.Unpublished),
	}
	return msgpack.Marshal(&st)
}

func decodeState(b []byte) (sourceState, error) {
	var st storedState
	if err := msgpack.Unmarshal(b, &st); err != nil {
		return sourceState{}, fmt.Errorf("%w: source state: %v", ErrFormat, err)
	}
	s := sourceState{
		HighSeq: st.HighSeq, LowSeq: st.LowSeq, Count: st.Count, Bytes: st.Bytes,
		Gaps:    rangesIn(st.Gaps),
		Session: st.Session, Created: st.Created, LastRegister: st.LastRegister,
		TrimmedThrough: st.TrimmedThrough,
		ExpiredSession: st.ExpiredSession, ExpiredUnixNano: st.ExpiredUnixNano,
		ReleasedGaps: rangesIn(st.ReleasedGaps), ReleasedFloor: st.ReleasedFloor,
		Unpublished: rangesIn(st.Unpublished),
	}
	if !st.ReleasedKept {
		s.ReleasedGaps, s.ReleasedFloor = nil, s.TrimmedThrough
	}
	if err := s.checkReleased(); err != nil {
		return sourceState{}, fmt.Errorf("%w: source state: %v", ErrFormat, err)
	}
	if err := s.checkGaps(); err != nil {
		return sourceState{}, fmt.Errorf("%w: source state: %v", ErrFormat, err)
	}
	if err := s.checkUnpublished(); err != nil {
		return sourceState{}, fmt.Errorf("%w: source state: %v", ErrFormat, err)
	}
	return s, nil
}

// checkGaps refuses gaps this code could not have written (read from a
// damaged file): a range reversed, out of order or overlapping the one
// before it, or reaching HighSeq, which is always held. Read as they are,
// they would have the store call held messages missing or missing ones
// held.
func (s *sourceState) checkGaps() error {
	var low uint64
	for i, g := range s.Gaps {
		if g.From < 1 || g.To < g.From || (i > 0 && g.From <= low) || g.To >= s.HighSeq {
			return fmt.Errorf("gap %v reversed, out of order or not below the highest sequence number %d", g, s.HighSeq)
		}
		low = g.To
	}
	return nil
}

// checkReleased refuses a record of released gaps that this code could
// not have written (read from a damaged file): ranges out of order or
// overlapping, reaching above TrimmedThrough or down to the floor, or
// more than maxReleasedGaps. Read as it is, such a record would have the
// group acknowledge numbers it never held.
func (s *sourceState) checkReleased() error {
	if s.ReleasedFloor > s.TrimmedThrough {
		return fmt.Errorf("released gaps' floor %d above TrimmedThrough %d", s.ReleasedFloor, s.TrimmedThrough)
	}
	if len(s.ReleasedGaps) > maxReleasedGaps {
		return fmt.Errorf("%d released gaps, at most %d are kept", len(s.ReleasedGaps), maxReleasedGaps)
	}
	low := s.ReleasedFloor
	for _, g := range s.ReleasedGaps {
		if g.From <= low || g.To < g.From || g.To > s.TrimmedThrough {
			return fmt.Errorf("released gap %v out of order or outside (%d, %d]", g, s.ReleasedFloor, s.TrimmedThrough)
		}
		low = g.To
	}
	return nil
}

// admit decides what to do with message seq of size bytes and updates the
// bookkeeping accordingly. It returns store=false for a sequence number
// already held (a duplicate). newGap is the gap opened when seq jumps past
// HighSeq+1. seq must be ≥ 1.
func (s *sourceState) admit(seq uint64, size int) (store bool, newGap *Range) {
	switch {
	case seq > s.HighSeq:
		if seq > s.HighSeq+1 {
			g := Range{From: s.HighSeq + 1, To: seq - 1}
			s.Gaps = append(s.Gaps, g) // beyond every earlier gap: order kept
			newGap = &g
		}
		s.HighSeq = seq
	case !s.fillGap(seq):
		return false, nil
	}
	s.Count++
	s.Bytes += uint64(size)
	if s.LowSeq == 0 || seq < s.LowSeq {
		s.LowSeq = seq
	}
	return true, newGap
}

// fillGap removes seq from the gap holding it, shrinking or splitting the
// gap, and reports whether seq was in a gap at all.
func (s *sourceState) fillGap(seq uint64) bool {
	i := sort.Search(len(s.Gaps), func(i int) bool { return s.Gaps[i].To >= seq })
	if i == len(s.Gaps) || s.Gaps[i].From > seq {
		return false
	}
	g := s.Gaps[i]
	switch {
	case g.From == seq && g.To == seq:
		s.Gaps = append(s.Gaps[:i], s.Gaps[i+1:]...)
	case g.From == seq:
		s.Gaps[i].From++
	case g.To == seq:
		s.Gaps[i].To--
	default:
		s.Gaps = append(s.Gaps, Range{})
		copy(s.Gaps[i+2:], s.Gaps[i+1:])
		s.Gaps[i] = Range{From: g.From, To: seq - 1}
		s.Gaps[i+1] = Range{From: seq + 1, To: g.To}
	}
	return true
}

// releaseGaps moves the gaps at or below through to the released gaps,
// splitting one that straddles it, and records through as the new
// TrimmedThrough. through must be above the current TrimmedThrough and at
// most HighSeq. Count, Bytes and LowSeq are the caller's: they depend on
// the messages actually deleted.
func (s *sourceState) releaseGaps(through uint64) {
	i := sort.Search(len(s.Gaps), func(i int) bool { return s.Gaps[i].To > through })
	for _, g := range s.Gaps[:i] {
		s.recordReleasedGap(g)
	}
	kept := s.Gaps[i:]
	if len(kept) > 0 && kept[0].From <= through {
		s.recordReleasedGap(Range{From: kept[0].From, To: through})
		kept[0].From = through + 1
	}
	if len(kept) == 0 {
		s.Gaps = nil
	} else {
		s.Gaps = append(s.Gaps[:0], kept...)
	}
	s.TrimmedThrough = through
	s.releaseUnpublished(through)
}

// recordReleasedGap appends g (above every released gap) to the record,
// dropping the oldest past maxReleasedGaps and raising the floor over it.
func (s *sourceState) recordReleasedGap(g Range) {
	if g.To <= s.ReleasedFloor {
		return
	}
	g.From = max(g.From, s.ReleasedFloor+1)
	if n := len(s.ReleasedGaps); n > 0 && s.ReleasedGaps[n-1].To+1 == g.From {
		s.ReleasedGaps[n-1].To = g.To
		return
	}
	s.ReleasedGaps = append(s.ReleasedGaps, g)
	if len(s.ReleasedGaps) > maxReleasedGaps {
		s.ReleasedFloor = s.ReleasedGaps[0].To
		s.ReleasedGaps = append(s.ReleasedGaps[:0], s.ReleasedGaps[1:]...)
	}
}

// heldReleased reports whether seq, at or below TrimmedThrough, is known
// to have been held until retention released it.
func (s *sourceState) heldReleased(seq uint64) bool {
	if seq > s.TrimmedThrough || seq <= s.ReleasedFloor {
		return false
	}
	i := sort.Search(len(s.ReleasedGaps), func(i int) bool { return s.ReleasedGaps[i].To >= seq })
	return i == len(s.ReleasedGaps) || s.ReleasedGaps[i].From > seq
}

// holds reports whether seq is held.
func (s *sourceState) holds(seq uint64) bool {
	if seq <= s.TrimmedThrough || seq > s.HighSeq {
		return false
	}
	i := sort.Search(len(s.Gaps), func(i int) bool { return s.Gaps[i].To >= seq })
	return i == len(s.Gaps) || s.Gaps[i].From > seq
}

func validSourceName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty source name", ErrBadCommand)
	case len(name) > MaxSourceNameLen:
		return fmt.Errorf("%w: source name of %d bytes exceeds %d", ErrBadCommand, len(name), MaxSourceNameLen)
	}
	return nil
}

// SourceInfo describes one source's repository.
type SourceInfo struct {
	Name    string
	HighSeq uint64  // highest sequence number held; a resuming publisher continues at HighSeq+1
	LowSeq  uint64  // oldest sequence number held; 0 if none
	Count   uint64  // messages held
	Bytes   uint64  // payload bytes held
	Gaps    []Range // sequence numbers in (TrimmedThrough, HighSeq) this group never received, ascending
	// Unpublished are the parts of Gaps its publishers said they never
	// used (Unpublished): never published, not lost. Repair still fills
	// them from a group that holds them.
	Unpublished []Range

	// TrimmedThrough is how far retention released the source: the highest
	// Trim.Through applied, capped at HighSeq; 0 if never trimmed. Every
	// sequence number at or below it is absent from Read and from Gaps
	// (whether it was dropped or never received) and is never stored again.
	// Trimming keeps HighSeq: once everything held was dropped, Count and
	// LowSeq are 0 and TrimmedThrough equals HighSeq.
	TrimmedThrough uint64

	Session              string // session of the last registration; "" once an ExpireSession freed it
	CreatedUnixNano      int64  // time of the registration that created the source; 0 if a Publish did
	LastRegisterUnixNano int64  // time of the last registration; 0 if never registered

	// ExpiredSession is the last session an ExpireSession freed (cleared
	// from Session), and ExpiredUnixNano that command's time; "" and 0 if
	// none ever did. A later Register sets Session again and leaves them as
	// they are, so they tell the last expiry, not whether the source is free.
	ExpiredSession  string
	ExpiredUnixNano int64
}

func (s *sourceState) info(name string) SourceInfo {
	var gaps []Range
	if len(s.Gaps) > 0 {
		gaps = append([]Range(nil), s.Gaps...)
	}
	return SourceInfo{
		Name: name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Bytes: s.Bytes, Gaps: gaps,
		Session: s.Session, CreatedUnixNano: s.Created, LastRegisterUnixNano: s.LastRegister,
		TrimmedThrough: s.TrimmedThrough,
		ExpiredSession: s.ExpiredSession, ExpiredUnixNano: s.ExpiredUnixNano,
		Unpublished: s.unpublishedGaps(),
	}
}
