package publisher

import (
	"testing"
	"time"

	"umstore/wire"
)

// heardConn is a connection shared with other sources (connmux's Lane):
// it says when the store last answered any of them.
type heardConn struct {
	wire.FrameConn
	heard time.Time
}

func (c heardConn) Heard() time.Time { return c.heard }

// On a connection shared with other sources, a source that waits for its
// own answer behind theirs (the store's window of proposals per
// connection) is not silent while the store answers the others, up to
// sharedLiveness of its own silence. Before, each of 20,000 sources on one
// connection took its wait for a stall after AckTimeout and reconnected.
func TestQuietCountsASharedConnectionsAnswers(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name      string
		conn      wire.FrameConn
		own       time.Duration // since this source's last answer
		wantUnder time.Duration
		wantOver  time.Duration
	}{
		{"own connection", nil, 5 * time.Second, 0, 5 * time.Second},
		{"shared, the store answered others just now", heardConn{heard: now}, 5 * time.Second, time.Second, 0},
		{"shared, the store silent too", heardConn{heard: now.Add(-4 * time.Second)}, 5 * time.Second, 0, 4 * time.Second},
		{"shared, this source silent past sharedLiveness", heardConn{heard: now}, sharedLiveness + time.Second, 0, sharedLiveness},
		{"shared, never answered anyone", heardConn{}, 2 * time.Second, 0, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &groupStream{c: tc.conn}
			got := s.quiet(now.Add(-tc.own))
			if tc.wantUnder > 0 && got >= tc.wantUnder {
				t.Errorf("quiet = %v, want under %v", got, tc.wantUnder)
			}
			if got < tc.wantOver {
				t.Errorf("quiet = %v, want at least %v", got, tc.wantOver)
			}
		})
	}
}
