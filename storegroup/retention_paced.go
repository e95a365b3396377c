package storegroup

import (
	"time"

	"umstore/repository"
)

// ReasonConsumed is the Trim reason of messages released because every
// active paced receiver of a paced source consumed them.
const reasonConsumed = "consumed"

// pacedThrough adjusts the retention decision for source (release through
// through, for reason) to the source's pacing: a paced source with active
// paced receivers releases everything they all consumed, and, in blocking
// mode, nothing they have not, whatever the limits say (the publisher is
// held back instead, see clientserver's pacing.go). In non-blocking mode the limits still
// release the oldest messages: a lagging receiver then sees them as
// unrecoverable loss. A source without active paced receivers is retained
// by its limits alone.
func (rt *retainer) pacedThrough(source string, through uint64, reason string) (uint64, string) {
	st, err := rt.repo.Pacing(source)
	if err != nil || st.Mode == repository.PacingNone || st.Holders == 0 {
		return through, reason
	}
	return pacedRelease(st, through, reason)
}

// pacedRelease is pacedThrough's rule, for a paced source with holders.
func pacedRelease(st repository.PacingState, through uint64, reason string) (uint64, string) {
	if st.Mode == repository.PacingBlocking && through > st.ConsumedThrough {
		return st.ConsumedThrough, reasonConsumed // what the limits would release beyond it is held
	}
	if st.ConsumedThrough > through {
		return st.ConsumedThrough, reasonConsumed
	}
	return through, reason
}

// releaseConsumed releases, at once, the messages of source through
// consumed (what every active paced receiver consumed), for the pacer: a
// held-back publisher goes on as soon as there is room. It reports whether
// it proposed a Trim that took effect.
func (rt *retainer) releaseConsumed(source string, consumed uint64) bool {
	info, ok, err := rt.repo.Source(source)
	if err != nil || !ok || consumed <= info.TrimmedThrough || info.LowSeq == 0 {
		return false
	}
	through := min(consumed, info.LowSeq+retentionStep)
	return rt.trim(source, through, reasonConsumed, time.Now())
}
