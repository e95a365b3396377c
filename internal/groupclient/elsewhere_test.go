package groupclient

import (
	"testing"
	"time"

	"umstore/wire"
)

// LeaderElsewhere finds another member that leads, and only such a member:
// followers, paused stores, stores of another group and the silent leader
// itself do not count, and the answer comes within its timeout.
func TestLeaderElsewhere(t *testing.T) {
	pong := func(group int, leading bool) func(int, wire.Message) wire.Message {
		return answer(&wire.Pong{Store: "S", Group: group, Leading: leading})
	}
	type store struct {
		script func(int, wire.Message) wire.Message // nil: a paused store
		leads  bool                                 // the answer LeaderElsewhere should give
	}
	cases := []struct {
		name   string
		silent func(int, wire.Message) wire.Message
		others []store
		found  bool
	}{
		{"a follower and a new leader", pong(1, true), []store{{script: pong(1, false)}, {script: pong(1, true), leads: true}}, true},
		{"followers only: the silent leader is slow", pong(1, true), []store{{script: pong(1, false)}, {script: pong(1, false)}}, false},
		{"a paused member and a new leader", pong(1, true), []store{{}, {script: pong(1, true), leads: true}}, true},
		{"a store of another group leads", pong(1, true), []store{{script: pong(1, false)}, {script: pong(2, true)}}, false},
		{"every other member paused", pong(1, true), []store{{}, {}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			silent := newFakeStore(t, tc.silent)
			silent.group = 1
			addrs := []string{silent.addr()}
			want := ""
			for _, o := range tc.others {
				if o.script == nil {
					addrs = append(addrs, pausedStore(t))
					continue
				}
				s := newFakeStore(t, o.script)
				addrs = append(addrs, s.addr())
				if o.leads {
					want = s.addr()
				}
			}
			c := New(1, addrs, dialer())
			c.sameGroup(1)
			start := time.Now()
			got, ok := c.LeaderElsewhere(testCtx(t), silent.addr(), 500*time.Millisecond)
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("took %v with a 500ms timeout", took)
			}
			if ok != tc.found || got != want {
				t.Fatalf("LeaderElsewhere = %q, %v; want %q, %v", got, ok, want, tc.found)
			}
			if d, _ := silent.counts(); d != 0 {
				t.Fatalf("the silent leader was dialled %d times; it must not be asked", d)
			}
		})
	}
}
