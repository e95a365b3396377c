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

// Range is an inclusive range of sequence numbers.
type Range struct {
	From, To uint64
}

// Len returns how many sequence numbers the range covers.
func (g Range) Len() uint64 { return g.To - g.From + 1 }

// String formats the range as "[from,to]".
func (g Range) String() string { return fmt.Sprintf("[%d,%d]", g.From, g.To) }

// sourceState is the bookkeeping of one source's repository. The messages
// held are exactly [1, HighSeq] minus Gaps; the oldest of them is LowSeq.
type sourceState struct {
	HighSeq      uint64
	LowSeq       uint64 // 0 while no message is held
	Count        uint64 // messages held
	Bytes        uint64 // payload bytes held
	Gaps         []Range
	Session      string // session of the last registration
	Created      int64  // UnixNano of the registration that created it; 0 if created by a Publish
	LastRegister int64  // UnixNano of the last registration
}

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
}

func encodeState(s *sourceState) ([]byte, error) {
	st := storedState{
		HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Bytes: s.Bytes,
		Session: s.Session, Created: s.Created, LastRegister: s.LastRegister,
	}
	if len(s.Gaps) > 0 {
		st.Gaps = make([][2]uint64, len(s.Gaps))
		for i, g := range s.Gaps {
			st.Gaps[i] = [2]uint64{g.From, g.To}
		}
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
		Session: st.Session, Created: st.Created, LastRegister: st.LastRegister,
	}
	if len(st.Gaps) > 0 {
		s.Gaps = make([]Range, len(st.Gaps))
		for i, g := range st.Gaps {
			s.Gaps[i] = Range{From: g[0], To: g[1]}
		}
	}
	return s, nil
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

// holds reports whether seq is held (ignoring retention).
func (s *sourceState) holds(seq uint64) bool {
	if seq == 0 || seq > s.HighSeq {
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
	Gaps    []Range // sequence numbers below HighSeq this group never received, ascending

	Session              string // session of the last registration
	CreatedUnixNano      int64  // time of the registration that created the source; 0 if a Publish did
	LastRegisterUnixNano int64  // time of the last registration; 0 if never registered
}

func (s *sourceState) info(name string) SourceInfo {
	var gaps []Range
	if len(s.Gaps) > 0 {
		gaps = append([]Range(nil), s.Gaps...)
	}
	return SourceInfo{
		Name: name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Bytes: s.Bytes, Gaps: gaps,
		Session: s.Session, CreatedUnixNano: s.Created, LastRegisterUnixNano: s.LastRegister,
	}
}
