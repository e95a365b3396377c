package receiver

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
)

// Retention releases a source's oldest messages on purpose: a number at
// or below how far some group released the source (wire
// FetchReply.Released) that no reachable group holds is released, not
// lost. A read from Oldest asked for what is retained and skips such
// numbers without a word; a read from an explicit number is told which of
// the numbers it asked for were released (*ReleasedError), apart from
// those held by no group that retention did not release (*MissingError).

// Oldest, as the from of Read or Follow, starts at the oldest message any
// group retains and skips, without reporting them, the numbers retention
// releases while the read goes on: the reader asked for what is retained.
// A durable receiver resumes as with Resume.
const Oldest uint64 = math.MaxUint64 - 1

// ErrReleased is the error of a read asked for numbers retention released.
var ErrReleased = errors.New("messages released by retention")

// ReleasedError names the ranges a read asked for that retention released
// (and no reachable group holds any more): gone on purpose, not lost.
type ReleasedError struct{ Ranges []Range }

func (e *ReleasedError) Error() string {
	return fmt.Sprintf("%v: %s (ask from the oldest retained to read what is kept)", ErrReleased, rangesString(e.Ranges))
}

func (e *ReleasedError) Unwrap() error { return ErrReleased }

func rangesString(rs []Range) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// releasedMark is the highest number any group said its retention
// released, as far as this receiver saw: it only grows.
type releasedMark struct{ v atomic.Uint64 }

func (m *releasedMark) see(released uint64) {
	for {
		cur := m.v.Load()
		if released <= cur || m.v.CompareAndSwap(cur, released) {
			return
		}
	}
}

func (m *releasedMark) get() uint64 { return m.v.Load() }

// Released returns the highest sequence number any group said its
// retention released, of those this receiver's reads and streams saw (0
// if none): a range Follow reports to onMissing at or below it was
// released on purpose, not lost.
func (r *Receiver) Released() uint64 { return r.released.get() }

// splitReleased splits holes into those at or below released and the
// rest, each ascending.
func splitReleased(holes []Range, released uint64) (gone, missing []Range) {
	for _, h := range holes {
		switch {
		case h.To <= released:
			gone = append(gone, h)
		case h.From > released:
			missing = append(missing, h)
		default:
			gone = append(gone, Range{From: h.From, To: released})
			missing = append(missing, Range{From: released + 1, To: h.To})
		}
	}
	return gone, missing
}
