package storegroup

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/wire"
)

// Retention releases a source's oldest messages in each group on its own,
// and a group that missed a range while it had no quorum, then was
// repaired from a group that had released part of it meanwhile, would
// hold a gap there forever: the copies start above the other group's
// release, so apply records the numbers below them as never received.
// What one group released is released for the deployment (the limits are
// the deployment's), so repair follows it: when another group released a
// source further than this one, the leader proposes a Trim through the
// same number (at most its own highest), and every member drops and
// releases exactly what that Trim says, as for its own retention. A Trim
// is an ordinary entry: nothing new is applied, and older logs replay as
// before. A paced source in blocking mode is not released past what its
// paced receivers consumed here, as retention's own rule (pacedRelease).

// A group that comes back is refilled first by the publishers that still
// hold what it missed (they resend within their reconnect delay), and a
// number it holds is released as held, not as never received: a Nak of
// "lost" to a publisher resending a number retention released elsewhere
// would be retention reported as loss again. So a leader follows another
// group's release only once it has led for followAfter repair intervals.
const followAfter = 3

// reasonFollowed is the Trim reason of a release followed from another
// group.
const reasonFollowed = "released by group %d"

// followRelease releases source through released, the highest number
// group idx's retention released, when this group released less. It
// reports how many messages the Trims dropped here.
func (rp *repairer) followRelease(idx int, source string, released uint64) (uint64, error) {
	if released == 0 || !rp.ledLongEnough() {
		return 0, nil
	}
	ours, ok, err := rp.repo.Source(source)
	if err != nil || !ok {
		return 0, err
	}
	through := min(released, ours.HighSeq) // a Trim never releases what the group has not seen
	if st, err := rp.repo.Pacing(source); err == nil && st.Holders > 0 && st.Mode == repository.PacingBlocking {
		through = min(through, st.ConsumedThrough)
	}
	if through <= ours.TrimmedThrough {
		return 0, nil
	}
	var dropped uint64
	for low := ours.TrimmedThrough + 1; ; low += retentionStep + 1 {
		step := min(through, low+retentionStep)
		n, err := rp.trim(source, step, fmt.Sprintf(reasonFollowed, idx))
		dropped += n
		if err != nil {
			return dropped, err
		}
		if step >= through {
			break
		}
	}
	rp.log.Info("released what another group's retention released", "source", source, "other_group", idx, "through", through, "dropped", dropped)
	return dropped, nil
}

// ledLongEnough reports whether this store has led for followAfter repair
// intervals.
func (rp *repairer) ledLongEnough() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return !rp.ledSince.IsZero() && time.Since(rp.ledSince) >= followAfter*rp.interval
}

// follow is followRelease for theirs, counted in the repair status.
func (rp *repairer) follow(idx int, theirs wire.SourceState) error {
	n, err := rp.followRelease(idx, theirs.Name, theirs.Released)
	if n > 0 {
		rp.mu.Lock()
		rp.status.FollowedReleases += n
		rp.mu.Unlock()
	}
	return err
}

// trim proposes one Trim and returns how many messages it dropped.
func (rp *repairer) trim(source string, through uint64, reason string) (uint64, error) {
	if !rp.isLeader() {
		return 0, errors.New("no longer the leader")
	}
	f := rp.proposer.Propose(repository.EncodeTrim(repository.Trim{Source: source, Through: through, Reason: reason, UnixNano: wallclock.Now().UnixNano()}))
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, errors.New("no longer the leader")
		}
		return 0, err
	}
	res, ok := f.Response().(*repository.Result)
	if !ok {
		return 0, fmt.Errorf("release proposal failed: %v", f.Response())
	}
	if res.Err != nil {
		return 0, res.Err
	}
	if res.Trim == nil {
		return 0, nil
	}
	return res.Trim.Dropped, nil
}
