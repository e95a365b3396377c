package dirlock

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	const s, ms = time.Second, time.Millisecond
	tests := []struct {
		name string
		o    Options
		want string // substring of the error; "" for valid
	}{
		{"zero value", Options{}, ""},
		{"flock explicit", Options{Mode: ModeFlock, Standby: true}, ""},
		{"unknown mode", Options{Mode: "posix"}, "unknown lock mode"},
		{"negative keep-alive", Options{KeepAlive: -s}, "keep-alive must not be negative"},
		{"negative acquire interval", Options{AcquireInterval: -s}, "acquire interval must not be negative"},
		{"negative lease", Options{Mode: ModeLease, LeaseDuration: -s}, "lease duration must not be negative"},
		{"negative margin", Options{Mode: ModeLease, SafetyMargin: -s}, "safety margin must not be negative"},
		{"flock ignores lease settings", Options{KeepAlive: 5 * s, AcquireInterval: 100 * ms}, ""},
		{"lease defaults", Options{Mode: ModeLease}, ""},
		{"lease test settings", Options{Mode: ModeLease, KeepAlive: 100 * ms, LeaseDuration: 500 * ms, AcquireInterval: 200 * ms}, ""},
		{"lease acquire equals keep-alive", Options{Mode: ModeLease, KeepAlive: s, AcquireInterval: s}, "must be longer than the keep-alive"},
		{"lease acquire below keep-alive", Options{Mode: ModeLease, KeepAlive: 5 * s, AcquireInterval: s}, "must be longer than the keep-alive"},
		{"lease default acquire below keep-alive default", Options{Mode: ModeLease, AcquireInterval: 500 * ms}, "must be longer than the keep-alive"},
		{"lease margin equals lease", Options{Mode: ModeLease, LeaseDuration: 3 * s, SafetyMargin: 3 * s}, "must be shorter than the lease duration"},
		{"lease keep-alive leaves no room", Options{Mode: ModeLease, KeepAlive: s, LeaseDuration: 1500 * ms, SafetyMargin: 500 * ms, AcquireInterval: 2 * s}, "minus safety margin"},
		{"lease duration below keep-alive", Options{Mode: ModeLease, KeepAlive: 2 * s, LeaseDuration: s, AcquireInterval: 3 * s}, "minus safety margin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Errorf("Validate: nil, want an error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("Validate: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	l := Options{Mode: ModeLease, KeepAlive: 300 * time.Millisecond}.withDefaults()
	if l.AcquireInterval != 600*time.Millisecond || l.LeaseDuration != 900*time.Millisecond || l.SafetyMargin != 300*time.Millisecond {
		t.Errorf("lease defaults: %+v", l)
	}
	f := Options{}.withDefaults()
	if f.Mode != ModeFlock || f.AcquireInterval != DefaultFlockAcquireInterval || f.HolderID == "" || f.Logger == nil {
		t.Errorf("flock defaults: %+v", f)
	}
	if a, b := (Options{}).withDefaults().HolderID, (Options{}).withDefaults().HolderID; a == b {
		t.Errorf("default holder ids repeat: %q", a)
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"": ModeFlock, "flock": ModeFlock, "lease": ModeLease} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("fcntl"); err == nil {
		t.Error("ParseMode accepted fcntl")
	}
}

func TestAcquireRefusesBadOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + "/store"
	_, err := Acquire(context.Background(), dir, Options{Mode: ModeLease, KeepAlive: time.Second, AcquireInterval: time.Second})
	if err == nil || !strings.Contains(err.Error(), "acquire interval") {
		t.Fatalf("Acquire: %v", err)
	}
}
