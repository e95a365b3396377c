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
		{name: "RegID and session ID", tune: func(c *Config) { c.RegID, c.SessionID = 1, 2 }, wantErr: "at most one of Session, RegID and SessionID"},
		{name: "RegID and session", tune: func(c *Config) { c.RegID, c.Session = 1, "s" }, wantErr: "at most one"},
		{name: "notify and bytes", tune: func(c *Config) { c.Flight, c.FlightSizeBytes = FlightNotify, 10 }},
		{name: "negative bytes", tune: func(c *Config) { c.FlightSizeBytes = -1 }, wantErr: "FlightSizeBytes must not be negative"},
		{name: "negative lifetime", tune: func(c *Config) { c.StabilityLifetime = -1 }, wantErr: "StabilityLifetime"},
		{name: "unknown flight behaviour", tune: func(c *Config) { c.Flight = 7 }, wantErr: "FlightBehavior(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Source, cfg.Groups = "s", [][]string{{"127.0.0.1:1"}}
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
