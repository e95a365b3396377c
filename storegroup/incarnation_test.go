package storegroup

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Who may take a source over from its holder: the holder's own later
// incarnation at once, anyone once the holder went silent, nobody else.
func TestClaimIncarnations(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	const timeout = 30 * time.Second
	tests := []struct {
		name        string
		holder      string
		heard       time.Duration // ago
		claimer     string
		wantExpired string
		wantErr     bool
		wantFenced  bool
	}{
		{"same session again", "pub#5", time.Second, "pub#5", "", false, false},
		{"later incarnation, holder live", "pub#5", time.Second, "pub#6", "pub#5", false, false},
		{"earlier incarnation, holder live", "pub#6", time.Second, "pub#5", "", true, true},
		{"earlier incarnation, holder silent", "pub#6", time.Minute, "pub#5", "pub#6", false, false},
		{"another publisher, holder live", "pub#5", time.Second, "other#9", "", true, false},
		{"another publisher, holder silent", "pub#5", time.Minute, "other#9", "pub#5", false, false},
		{"sessions without an epoch", "abc", time.Second, "abd", "", true, false},
		{"an epoch is not an identity", "pub#5", time.Second, "#6", "", true, false},
		{"identities with their own #", "a#b#5", time.Second, "a#b#6", "a#b#5", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := newSessions()
			ss.reset(map[string]string{"s": tt.holder}, now.Add(-tt.heard))
			expired, err := ss.claim("s", tt.claimer, now, timeout, 0)
			if (err != nil) != tt.wantErr || errors.Is(err, errFenced) != tt.wantFenced {
				t.Fatalf("claim: %v, want error %v fenced %v", err, tt.wantErr, tt.wantFenced)
			}
			if expired != tt.wantExpired {
				t.Fatalf("expired %q, want %q", expired, tt.wantExpired)
			}
		})
	}
}

// The stores decide how far ahead an epoch may be: at most maxEpochAhead
// past the leader's clock. A claim naming the last epoch is refused before
// it could fence the holder (on the code before the bound it took the
// source over and fenced every later incarnation of the publisher), while
// an epoch a skewed clock explains still takes over, and a restart after
// the bound has passed takes the source back.
func TestClaimRefusesAnEpochFarAhead(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	ns := func(d time.Duration) string { return fmt.Sprint(now.Add(d).UnixNano()) }
	const timeout = 30 * time.Second
	tests := []struct {
		name        string
		claimer     string
		wantExpired string
		wantAhead   bool
	}{
		{"the last epoch", "session-id:0x0000000000001234#18446744073709551615", "", true},
		{"2^63", "session-id:0x0000000000001234#9223372036854775808", "", true},
		{"just past the bound", "session-id:0x0000000000001234#" + ns(maxEpochAhead+time.Nanosecond), "", true},
		{"at the bound", "session-id:0x0000000000001234#" + ns(maxEpochAhead), "session-id:0x0000000000001234#" + ns(-time.Hour), false},
		{"a clock a second ahead", "session-id:0x0000000000001234#" + ns(time.Second), "session-id:0x0000000000001234#" + ns(-time.Hour), false},
		{"a restart", "session-id:0x0000000000001234#" + ns(0), "session-id:0x0000000000001234#" + ns(-time.Hour), false},
		{"a session without an epoch", "session-id:0x0000000000001234", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := newSessions()
			holder := "session-id:0x0000000000001234#" + ns(-time.Hour)
			ss.reset(map[string]string{"s": holder}, now.Add(-time.Second))
			expired, err := ss.claim("s", tt.claimer, now, timeout, 0)
			if errors.Is(err, errEpochAhead) != tt.wantAhead {
				t.Fatalf("claim: %v, want refused as ahead: %v", err, tt.wantAhead)
			}
			if tt.wantAhead {
				if !strings.Contains(err.Error(), "check the publisher host's clock") {
					t.Fatalf("the refusal %q does not say what to do", err)
				}
				// The holder keeps the source.
				if again, err := ss.claim("s", holder, now, timeout, 0); err != nil || again != "" {
					t.Fatalf("the holder after the refusal: expired %q, %v", again, err)
				}
				return
			}
			if expired != tt.wantExpired {
				t.Fatalf("expired %q, want %q (err %v)", expired, tt.wantExpired, err)
			}
		})
	}
}

// The leader holds at most limit sources for sessions: a source not held
// is refused at the limit, one held is claimed again or taken over as
// ever, and a source freed makes room.
func TestClaimSessionLimit(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	const timeout = 30 * time.Second
	ss := newSessions()
	steps := []struct {
		source, session string
		at              time.Duration // after now
		want            error
	}{
		{"a", "s1", 0, nil},
		{"b", "s1", 0, nil},
		{"c", "s2", 0, errSessionLimit},
		{"a", "s1", 0, nil},       // held: claimed again
		{"b", "s2", timeout, nil}, // s1 silent: taken over, not counted again
		{"c", "s2", timeout, errSessionLimit},
	}
	for i, st := range steps {
		if _, err := ss.claim(st.source, st.session, now.Add(st.at), timeout, 2); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("step %d: claim(%s, %s) = %v, want %v", i+1, st.source, st.session, err, st.want)
		}
	}
	ss.leave("a", "s1")
	if _, err := ss.claim("c", "s2", now.Add(timeout), timeout, 2); err != nil {
		t.Fatalf("a source freed makes room: %v", err)
	}
}
