package receiver

import (
	"context"
	"math"
	"time"

	"umstore/wire"
)

// A group that does not answer costs a reader a short bound, not a
// time-out. A host that is paused (SIGSTOP) or cut off takes a group's
// majority with it: the group's store on the other host answers "no
// leader" and its own stores accept connections and never answer, so
// asking that group costs the group client's whole round of attempts
// (seconds). A reader asks every group at once, goes on with the groups
// that answered once one did and the others had otherGroupsWait more,
// and asks a group it found silent only within that bound until the
// group answers again. Nothing is lost by going on: what the answering
// groups lack is reported as missing, as for any group that cannot be
// reached.

// otherGroupsWait is how long, once one group answered, a reader waits
// for the others before it goes on without them; and how long it asks a
// group that did not answer before to fill the holes of another.
const otherGroupsWait = 500 * time.Millisecond

// eachGroupMeta asks every group for the source's bounds (a fetch of no
// messages), all at once, and passes each answer to fn, in the order they
// come. Once a group has answered it waits at most otherGroupsWait for the
// rest (not at all for groups found unreachable within downFor), and logs
// at info which did not answer. It fails only if no group answers.
func (r *Receiver) eachGroupMeta(ctx context.Context, fn func(*wire.FetchReply)) error {
	type answer struct {
		group int
		rep   *wire.FetchReply
		err   error
	}
	askCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(r.groups))
	silent := map[int]bool{}
	for i, g := range r.groups {
		silent[i] = true
		go func() {
			rep, err := r.fetch(askCtx, g, &wire.Fetch{Source: r.cfg.Source, From: math.MaxUint64, To: math.MaxUint64})
			answers <- answer{i, rep, err}
		}()
	}
	reached := 0
	var lastErr error
	var grace <-chan time.Time
	for len(silent) > 0 {
		select {
		case a := <-answers:
			delete(silent, a.group)
			if a.err != nil {
				r.failed(a.group)
				if lastErr == nil || isCode(a.err, wire.CodeForbidden) {
					lastErr = a.err // a refusal says more than a silent group
				}
				continue
			}
			r.reached(a.group)
			reached++
			fn(a.rep)
			if grace == nil {
				grace = time.After(r.graceFor(silent))
			}
		case <-grace:
			for i := range silent {
				r.failed(i)
				r.log.Info("a group did not answer in time: going on with the groups that did (what only it holds is reported missing)",
					"group", r.groups[i].Group, "waited", otherGroupsWait)
			}
			silent = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if reached == 0 {
		return unreachable(lastErr)
	}
	return nil
}

// graceFor is how long eachGroupMeta waits for the groups still silent
// once one answered: otherGroupsWait, or nothing when every one of them
// was found unreachable within downFor.
func (r *Receiver) graceFor(silent map[int]bool) time.Duration {
	for i := range silent {
		if !r.down(i) {
			return otherGroupsWait
		}
	}
	return 0
}

// askBound returns the context in which group i is asked to fill another
// group's holes: ctx, or within otherGroupsWait when i was found
// unreachable within downFor.
func (r *Receiver) askBound(ctx context.Context, i int) (context.Context, context.CancelFunc) {
	if r.down(i) {
		return context.WithTimeout(ctx, otherGroupsWait)
	}
	return context.WithCancel(ctx)
}
