package receiver

import (
	"fmt"
	"testing"
	"time"

	"umstore/wire"
)

// Follow's merger delivers the lowest connected group's payload for a
// number two groups stream with different payloads, whichever arrives
// first; a lower group that is down, or lags past lowerGroupWait, does not
// hold delivery back. Before, the first payload to arrive was delivered.
func TestMergerPrefersTheLowestGroup(t *testing.T) {
	t.Parallel()
	deliver := func(g int, seq uint64, p string) streamEvent {
		return streamEvent{group: g, connected: true, deliver: &wire.Deliver{Through: seq, Msgs: []wire.Msg{{Seq: seq, Payload: []byte(p)}}}}
	}
	for _, tc := range []struct {
		name   string
		events []streamEvent
		aged   bool // the pending message arrived longer than lowerGroupWait ago
		want   string
	}{
		{"higher group first, then the lower one", []streamEvent{{group: 0, connected: true, deliver: &wire.Deliver{}}, deliver(1, 1, "b"), deliver(0, 1, "a")}, false, "1:a"},
		{"lower group first", []streamEvent{deliver(0, 1, "a"), deliver(1, 1, "b")}, false, "1:a"},
		{"the lower group is not connected", []streamEvent{deliver(1, 1, "b")}, false, "1:b"},
		{"the lower group lags too long", []streamEvent{{group: 0, connected: true, deliver: &wire.Deliver{}}, deliver(1, 1, "b")}, true, "1:b"},
		{"the lower group lags, within the wait", []streamEvent{{group: 0, connected: true, deliver: &wire.Deliver{}}, deliver(1, 1, "b")}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &merger{next: 1, pending: map[uint64]pendingMsg{}, through: make([]uint64, 2), connected: make([]bool, 2), downSince: make([]time.Time, 2),
				released: &releasedMark{}, unpublished: &unpublishedSet{}}
			got := ""
			fn := func(msg Message) error { got += fmt.Sprintf("%d:%s", msg.Seq, msg.Payload); return nil }
			for _, ev := range tc.events {
				m.apply(ev)
				if tc.aged {
					for k, p := range m.pending {
						p.since = time.Now().Add(-2 * lowerGroupWait)
						m.pending[k] = p
					}
				}
				if err := m.deliver(fn, nil); err != nil {
					t.Fatal(err)
				}
			}
			if got != tc.want {
				t.Fatalf("delivered %q, want %q", got, tc.want)
			}
		})
	}
}

// Holes split into released, never published and missing.
func TestHolesReleasedUnpublishedMissing(t *testing.T) {
	t.Parallel()
	u := &unpublishedSet{}
	u.see([]wire.Range{{From: 40, To: 49}, {From: 45, To: 60}, {From: 0, To: 3}})
	for _, tc := range []struct {
		holes         []Range
		released      uint64
		gone, missing string
	}{
		{[]Range{{1, 10}}, 10, "[1-10]", "[]"},
		{[]Range{{1, 10}}, 5, "[1-5]", "[6-10]"},
		{[]Range{{30, 70}}, 0, "[]", "[30-39 61-70]"},
		{[]Range{{40, 60}}, 0, "[]", "[]"},
		{[]Range{{1, 5}, {35, 65}}, 3, "[1-3]", "[4-5 35-39 61-65]"},
	} {
		gone, missing := splitReleased(u.without(tc.holes), tc.released)
		if fmt.Sprint(gone) != tc.gone || fmt.Sprint(missing) != tc.missing {
			t.Errorf("holes %v, released through %d: gone %v, missing %v; want %s, %s", tc.holes, tc.released, gone, missing, tc.gone, tc.missing)
		}
	}
}
