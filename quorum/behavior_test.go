package quorum

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBehavior(t *testing.T) {
	tests := []struct {
		in      string
		want    Behavior
		wantErr bool
	}{
		{"any", Any, false},
		{"majority", Majority, false},
		{"all-active", AllActive, false},
		{"all", All, false},
		{"any-group", Any, false},
		{"all-groups", All, false},
		{"majority-groups", Any, true},
		{"", Any, true},
		{"ANY", Any, true},
		{" any", Any, true},
		{"quorum", Any, true},
		{"allactive", Any, true},
	}
	for _, tc := range tests {
		got, err := ParseBehavior(tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrUnknownBehavior) {
				t.Errorf("ParseBehavior(%q) error = %v, want one wrapping ErrUnknownBehavior", tc.in, err)
				continue
			}
			for _, name := range []string{`"any"`, `"majority"`, `"all-active"`, `"all"`} {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("ParseBehavior(%q) error %q does not name accepted value %s", tc.in, err, name)
				}
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBehavior(%q) = %v, %v; want %v, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestBehaviorStringRoundTrip(t *testing.T) {
	for _, b := range []Behavior{Any, Majority, AllActive, All} {
		got, err := ParseBehavior(b.String())
		if err != nil || got != b {
			t.Errorf("ParseBehavior(%q) = %v, %v; want %v", b.String(), got, err, b)
		}
		text, err := b.MarshalText()
		if err != nil || string(text) != b.String() {
			t.Errorf("%v.MarshalText() = %q, %v", b, text, err)
		}
		var u Behavior = -1
		if err := u.UnmarshalText(text); err != nil || u != b {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, u, err, b)
		}
	}
	if got := Behavior(0).String(); got != "any" {
		t.Errorf("zero Behavior = %q, want the default \"any\"", got)
	}
	if got := Behavior(7).String(); got != "Behavior(7)" {
		t.Errorf("Behavior(7).String() = %q", got)
	}
	if _, err := Behavior(-1).MarshalText(); !errors.Is(err, ErrUnknownBehavior) {
		t.Errorf("Behavior(-1).MarshalText() error = %v, want ErrUnknownBehavior", err)
	}
	u := Majority
	if err := u.UnmarshalText([]byte("most")); !errors.Is(err, ErrUnknownBehavior) || u != Majority {
		t.Errorf("UnmarshalText(most) = %v, %v; want error and value unchanged", u, err)
	}
}

func TestParseIntragroup(t *testing.T) {
	tests := []struct {
		in   string
		want error // nil, ErrUnsupported or ErrUnknownBehavior
	}{
		{"quorum", nil},
		{"all-active", ErrUnsupported},
		{"all", ErrUnsupported},
		{"any", ErrUnknownBehavior},
		{"majority", ErrUnknownBehavior},
		{"", ErrUnknownBehavior},
		{"Quorum", ErrUnknownBehavior},
	}
	for _, tc := range tests {
		err := ParseIntragroup(tc.in)
		if tc.want == nil {
			if err != nil {
				t.Errorf("ParseIntragroup(%q) = %v, want nil", tc.in, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("ParseIntragroup(%q) = %v, want one wrapping %v", tc.in, err, tc.want)
			continue
		}
		if other := map[error]error{ErrUnsupported: ErrUnknownBehavior, ErrUnknownBehavior: ErrUnsupported}[tc.want]; errors.Is(err, other) {
			t.Errorf("ParseIntragroup(%q) = %v, must not also wrap %v", tc.in, err, other)
		}
		if !strings.Contains(err.Error(), `"quorum"`) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseIntragroup(%q) error %q should name the input and \"quorum\"", tc.in, err)
		}
	}
	if err := ParseIntragroup("all"); !strings.Contains(err.Error(), "not supported yet") {
		t.Errorf("ParseIntragroup(all) error %q should say it is not supported yet", err)
	}
}
