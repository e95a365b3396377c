package wire

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxSourceNameLen is the longest source name, in bytes. It equals
// repository.MaxSourceNameLen, the bound the replicated state enforces
// (storegroup's tests check that the two agree).
const MaxSourceNameLen = 255

// ErrSourceName is wrapped by CheckSourceName's errors. It sits here rather
// than in errors.go because it is about names, not frames.
var ErrSourceName = errors.New("invalid source name")

// CheckSourceName says whether name may name a source: 1 to
// MaxSourceNameLen bytes of valid UTF-8, every character printable
// (letters, marks, digits, punctuation, symbols and the ASCII space; no
// control characters such as ESC, no format characters such as
// right-to-left overrides, no other kinds of space). Source names are
// printed by `umstored status`, the status page and logs, so a name must
// not be able to move a terminal's cursor, change its colours, or look like
// another name.
//
// The publisher SDK checks its Config with it and every store checks each
// request that names a source, so a bad name is refused before it reaches
// the log. Names already in a repository are not re-checked (the
// replicated rules never change for a command type); whatever prints them
// escapes them.
func CheckSourceName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrSourceName)
	case len(name) > MaxSourceNameLen:
		return fmt.Errorf("%w: %s is %d bytes; the limit is %d", ErrSourceName, QuoteName(name), len(name), MaxSourceNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrSourceName, QuoteName(name))
	}
	for i, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: %s has the unprintable character %U at byte %d; use letters, digits, punctuation, symbols and spaces", ErrSourceName, QuoteName(name), r, i)
		}
	}
	return nil
}

// QuoteName quotes a name for an error message: Go's quoting, which
// escapes every unprintable character, cut after 64 characters.
func QuoteName(name string) string {
	const keep = 64
	if utf8.RuneCountInString(name) <= keep {
		return strconv.Quote(name)
	}
	n := 0
	for i := range name {
		if n == keep {
			return strconv.Quote(name[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(name)
}
