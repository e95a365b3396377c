package publisher

import (
	"errors"
	"strings"
	"testing"
)

// The session a publisher registers as: a static RegID or UM session ID
// gives the same one at every start; at most one way of naming it.
func TestSessionIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tune    func(*Config)
		want    string
		wantErr string
	}{
		{name: "RegID", tune: func(c *Config) { c.RegID = 1000 }, want: "regid:1000"},
		{name: "session ID", tune: func(c *Config) { c.SessionID = 0xff }, want: "session-id:0x00000000000000ff"},
		{name: "session", tune: func(c *Config) { c.Session = "mine" }, want: "mine"},
		{name: "largest session ID", tune: func(c *Config) { c.SessionID = MaxSessionID }, want: "session-id:0xfffffffffffffffe"},
		{name: "session ID too large", tune: func(c *Config) { c.SessionID = MaxSessionID + 1 }, wantErr: "above the largest UM session ID"},
		{name: "RegID and session ID", tune: func(c *Config) { c.RegID, c.SessionID = 1, 2 }, wantErr: "at most one of Session, RegID, StoreRegIDs and SessionID"},
		{name: "RegID per store", tune: func(c *Config) { c.StoreRegIDs = [][]uint32{{7, 5}, {9}} }, want: storeRegIDsSession([][]uint32{{5, 7}, {9}})},
		{name: "RegID per store and RegID", tune: func(c *Config) { c.StoreRegIDs, c.RegID = [][]uint32{{7, 5}, {9}}, 1 }, wantErr: "at most one"},
		{name: "RegID per store, one 0", tune: func(c *Config) { c.StoreRegIDs = [][]uint32{{7, 0}, {9}} }, wantErr: "group 1 has a RegID 0"},
		{name: "RegID per store, too few", tune: func(c *Config) { c.StoreRegIDs = [][]uint32{{7}, {9}} }, wantErr: "gives group 1 1 RegIDs for its 2 stores"},
		{name: "RegID and session", tune: func(c *Config) { c.RegID, c.Session = 1, "s" }, wantErr: "at most one"},
		{name: "notify and bytes", tune: func(c *Config) { c.Flight, c.FlightSizeBytes = FlightNotify, 10 }},
		{name: "negative bytes", tune: func(c *Config) { c.FlightSizeBytes = -1 }, wantErr: "FlightSizeBytes must not be negative"},
		{name: "negative lifetime", tune: func(c *Config) { c.StabilityLifetime = -1 }, wantErr: "StabilityLifetime"},
		{name: "unknown flight behaviour", tune: func(c *Config) { c.Flight = 7 }, wantErr: "FlightBehavior(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Source, cfg.Groups = "s", [][]string{{"127.0.0.1:1", "127.0.0.1:2"}, {"127.0.0.1:3"}}
			tt.tune(&cfg)
			err := cfg.Validate()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate = %v, want ErrConfig with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" {
				if got := cfg.staticIdentity(); got != tt.want {
					t.Fatalf("session %q, want %q", got, tt.want)
				}
			}
		})
	}
	// A group's RegIDs are a set (its stores are one replicated store, any
	// of which may lead): the order a list gives them in is no other
	// session, the same RegIDs in other groups are.
	same := storeRegIDsSession([][]uint32{{1, 2, 3}, {4, 5, 6}})
	if got := storeRegIDsSession([][]uint32{{3, 1, 2}, {6, 5, 4}}); got != same || !strings.HasPrefix(same, "regids:") || len(same) != len("regids:")+16 {
		t.Fatalf("RegIDs per store in another order within their groups: %q, want %q (regids: and 16 hex digits)", got, same)
	}
	for _, other := range [][][]uint32{{{1, 2, 4}, {3, 5, 6}}, {{4, 5, 6}, {1, 2, 3}}, {{1, 2, 3}, {4, 5, 7}}} {
		if got := storeRegIDsSession(other); got == same {
			t.Fatalf("RegIDs %v give the session of %v", other, [][]uint32{{1, 2, 3}, {4, 5, 6}})
		}
	}
	cfg := DefaultConfig()
	if id := cfg.staticIdentity(); id != "" {
		t.Fatalf("without Session, RegID or SessionID the identity is not static: got %q", id)
	}
}

func TestParseFlightBehavior(t *testing.T) {
	t.Parallel()
	for _, b := range []FlightBehavior{FlightBlock, FlightNotify, FlightRefuse} {
		got, err := ParseFlightBehavior(b.String())
		if err != nil || got != b {
			t.Errorf("ParseFlightBehavior(%q) = %v, %v", b, got, err)
		}
	}
	if _, err := ParseFlightBehavior("Block"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseFlightBehavior(Block) = %v, want ErrConfig", err)
	}
}
