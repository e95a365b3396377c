package cli

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"orders", "orders"},
		{"Bestellungen für Köln", "Bestellungen für Köln"},
		{"", ""},
		{"evil\x1b[2J\x1b[H", `"evil\x1b[2J\x1b[H"`},
		{"two\nlines", `"two\nlines"`},
		{"csi\u009b31m", `"csi\u009b31m"`},
		{"rtl\u202eevil", `"rtl\u202eevil"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{`"quoted"`, `"\"quoted\""`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
