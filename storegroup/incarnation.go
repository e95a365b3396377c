package storegroup

import (
	"strconv"
	"strings"

	"umstore/storegroup/clientserver"
)

// A publisher session names an incarnation of a publisher: "IDENTITY#EPOCH",
// where IDENTITY stays the same across restarts (the publisher's state
// file keeps it, or the application sets it) and EPOCH grows with each
// incarnation. A restarted publisher therefore takes its source over at
// once instead of waiting out the source-activity-timeout of its own dead
// session, and its previous incarnation is fenced: the takeover goes
// through the log (ExpireSession, then Register), after which the
// repository refuses the old session's PublishAs entries, and the leader
// refuses the old incarnation's registrations (errFenced). A different
// publisher (another identity) still waits for the timeout. A session
// without an epoch (an older publisher) is an identity of its own.

// errFenced refuses a registration from an earlier incarnation of the
// publisher that holds the source; the client server answers it
// wire.CodeFenced.
var errFenced = clientserver.ErrFenced

// sessionIncarnation splits a session into its identity and epoch; ok is
// false for a session without an epoch.
func sessionIncarnation(session string) (identity string, epoch uint64, ok bool) {
	i := strings.LastIndexByte(session, '#')
	if i <= 0 || i == len(session)-1 {
		return "", 0, false
	}
	e, err := strconv.ParseUint(session[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return session[:i], e, true
}

// newerIncarnation reports whether a and b are incarnations of one
// publisher (same), and whether a is the later one.
func newerIncarnation(a, b string) (newer, same bool) {
	ia, ea, oka := sessionIncarnation(a)
	ib, eb, okb := sessionIncarnation(b)
	if !oka || !okb || ia != ib {
		return false, false
	}
	return ea > eb, true
}

// takeoverReason says, for the log, why session takes a source over from
// expired.
func takeoverReason(session, expired string) string {
	if newer, same := newerIncarnation(session, expired); same && newer {
		return "the publisher restarted: its new incarnation takes over and fences the old one"
	}
	return "a new publisher takes over after the old one's silence"
}
