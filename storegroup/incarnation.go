package storegroup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

// The stores, not the client, decide what an epoch may be: at most the
// leader's clock plus maxEpochAhead when the session registers. A
// publisher's epoch is the time it started, in nanoseconds (its state
// file's last epoch plus one when that is later), so a legitimate one is
// behind the leader's clock, or ahead of it by the hosts' clock skew. An
// epoch further ahead is refused (errEpochAhead) before anything is
// proposed: without the bound a client naming the last epoch, 2^64-1,
// would fence every later incarnation of the publisher whose identity it
// took, for as long as it stayed registered, and the publisher's own
// restarts could never take the source back. With it, a restart more than
// maxEpochAhead after any registration of the source has a later epoch
// than every one the stores accepted before, and takes the source over.
const maxEpochAhead = 10 * time.Minute

// errEpochAhead refuses a registration whose epoch is further ahead of the
// leader's clock than maxEpochAhead; the client server answers it
// wire.CodeBadRequest.
var errEpochAhead = clientserver.ErrEpochAhead

// checkEpoch refuses a session whose epoch is more than maxEpochAhead
// ahead of now; a session without an epoch has nothing to check.
func checkEpoch(session string, now time.Time) error {
	_, epoch, ok := sessionIncarnation(session)
	limit := now.Add(maxEpochAhead).UnixNano()
	if !ok || limit < 0 || epoch <= uint64(limit) {
		return nil
	}
	ahead := "more than 290 years"
	if d := epoch - uint64(now.UnixNano()); d < uint64(1<<63-1) {
		ahead = time.Duration(d).Round(time.Second).String()
	}
	return fmt.Errorf("%w: session %q names epoch %d, %s ahead of this store's clock; a store accepts an epoch at most %v ahead of it (an epoch is the time a publisher started, in nanoseconds): check the publisher host's clock, and the epoch in its state file",
		errEpochAhead, session, epoch, ahead, maxEpochAhead)
}

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
