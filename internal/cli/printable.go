package cli

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Printable returns s unchanged when it is valid UTF-8 and every character
// of it is printable (unicode.IsPrint: no control, format or unusual space
// characters), and otherwise s quoted with Go's escapes, e.g.
// "evil\x1b[2J". Text output passes names that came from the network
// (source names, a leader's address) through it, so that a name can
// neither send control sequences to a terminal nor forge a line of the
// output. The stores refuse such source names now (wire.CheckSourceName),
// but a repository written by an older version may still hold one.
func Printable(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	if s != "" && s[0] == '"' {
		// A name that starts with a quote would read as an escaped one.
		return strconv.Quote(s)
	}
	return s
}
