package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckSourceName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // "" for accepted, else part of the error
	}{
		{"orders", ""},
		{"orders.eu-west/1", ""},
		{"Bestellungen für Köln", ""},
		{"注文", ""},
		{strings.Repeat("s", MaxSourceNameLen), ""},
		{"", "empty"},
		{strings.Repeat("s", MaxSourceNameLen+1), "is 256 bytes; the limit is 255"},
		{"bad\xffutf8", `"bad\xffutf8" is not valid UTF-8`},
		{"red\x1b[31mtext", `"red\x1b[31mtext" has the unprintable character U+001B at byte 3`},
		{"csi\u009b31m", "U+009B"},
		{"line\nbreak", "U+000A"},
		{"tab\there", "U+0009"},
		{"del\x7f", "U+007F"},
		{"abc\u202edcba", "U+202E"},   // right-to-left override
		{"zero\u200bwidth", "U+200B"}, // zero-width space
		{"nbsp\u00a0name", "U+00A0"},  // a space that looks like another name
		{"nul\x00", "U+0000"},
	} {
		err := CheckSourceName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrSourceName) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want ErrSourceName mentioning %q", tc.name, err, tc.want)
		case err != nil && strings.ContainsAny(err.Error(), "\x1b\n\u009b\u202e"):
			t.Errorf("%q: the error repeats the name unescaped: %q", tc.name, err)
		}
	}
}

func TestQuoteNameCutsLongNames(t *testing.T) {
	got := QuoteName(strings.Repeat("é", 100))
	if want := `"` + strings.Repeat("é", 64) + `"…`; got != want {
		t.Errorf("QuoteName = %s, want %s", got, want)
	}
}
