package receiver

import (
	"context"
	"math"

	"umstore/wire"
)

// A group that does not answer costs a reader what it costs to find that
// out, once, not once per group in turn: a reader asks every group at
// once (Known, High, Oldest) and goes on when each has answered or
// failed. It waits for every group, however slow: a group left out would
// make Oldest start a read past numbers only it retains, and High end one
// before numbers only it holds. What makes a paused host cheap is the
// group client: a group whose reachable stores have known no leader for
// longer than an election takes fails at once (groupclient.
// LeaderlessError), instead of being asked round its stores until a
// time-out.

// eachGroupMeta asks every group for the source's bounds (a fetch of no
// messages), all at once, and passes each answer to fn, in the order they
// come. It fails only if no group answers.
func (r *Receiver) eachGroupMeta(ctx context.Context, fn func(*wire.FetchReply)) error {
	type answer struct {
		group int
		rep   *wire.FetchReply
		err   error
	}
	answers := make(chan answer, len(r.groups))
	for i, g := range r.groups {
		go func() {
			rep, err := r.fetch(ctx, g, &wire.Fetch{Source: r.cfg.Source, From: math.MaxUint64, To: math.MaxUint64})
			answers <- answer{i, rep, err}
		}()
	}
	reached := 0
	var lastErr error
	for range r.groups {
		a := <-answers
		if a.err != nil {
			r.failed(a.group)
			if lastErr == nil || isCode(a.err, wire.CodeForbidden) {
				lastErr = a.err // a refusal says more than a silent group
			}
			r.log.Info("a group did not answer; going on with those that did (what only it holds is not read)", "group", r.groups[a.group].Group, "err", a.err)
			continue
		}
		r.reached(a.group)
		reached++
		fn(a.rep)
	}
	if reached == 0 {
		return unreachable(lastErr)
	}
	return nil
}
