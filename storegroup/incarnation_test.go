package storegroup

import (
	"errors"
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
			expired, err := ss.claim("s", tt.claimer, now, timeout)
			if (err != nil) != tt.wantErr || errors.Is(err, errFenced) != tt.wantFenced {
				t.Fatalf("claim: %v, want error %v fenced %v", err, tt.wantErr, tt.wantFenced)
			}
			if expired != tt.wantExpired {
				t.Fatalf("expired %q, want %q", expired, tt.wantExpired)
			}
		})
	}
}
