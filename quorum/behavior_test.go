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
		want Intragroup
		err  error // nil or ErrUnknownBehavior
	}{
		{"quorum", IntragroupQuorum, nil},
		{"all-active", IntragroupAllActive, nil},
		{"all", IntragroupAll, nil},
		{"all-stores", IntragroupAll, nil}, // UM's alias
		{"any", IntragroupQuorum, ErrUnknownBehavior},
		{"majority", IntragroupQuorum, ErrUnknownBehavior},
		{"", IntragroupQuorum, ErrUnknownBehavior},
		{"Quorum", IntragroupQuorum, ErrUnknownBehavior},
	}
	for _, tc := range tests {
		got, err := ParseIntragroupBehavior(tc.in)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) || got != tc.want {
			t.Errorf("ParseIntragroupBehavior(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
			continue
		}
		if err := ParseIntragroup(tc.in); (err == nil) != (tc.err == nil) {
			t.Errorf("ParseIntragroup(%q) = %v, want an error: %t", tc.in, err, tc.err != nil)
		}
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				t.Errorf("ParseIntragroup(%q) = %v: every intragroup behaviour is implemented, none is unsupported", tc.in, err)
			}
			if !strings.Contains(err.Error(), `"all-active"`) || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseIntragroup(%q) error %q should name the input and the accepted values", tc.in, err)
			}
			continue
		}
		if text, _ := got.MarshalText(); tc.in != "all-stores" && string(text) != tc.in {
			t.Errorf("%v.MarshalText() = %q, want %q", got, text, tc.in)
		}
	}
	var b Intragroup
	if err := b.UnmarshalText([]byte("all")); err != nil || b != IntragroupAll {
		t.Errorf("UnmarshalText(all) = %v, %v", b, err)
	}
	if err := b.UnmarshalText([]byte("most")); err == nil || b != IntragroupAll {
		t.Errorf("UnmarshalText(most) = %v, %v; want an error and the value unchanged", b, err)
	}
	if max(IntragroupQuorum, IntragroupAll, IntragroupAllActive) != IntragroupAll || max(IntragroupQuorum, IntragroupAllActive) != IntragroupAllActive {
		t.Error("the stricter of two intragroup behaviours must be their max")
	}
}
