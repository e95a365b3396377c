package receiver

import (
	"context"
	"errors"
	"slices"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// Known reports whether a reachable group knows the source: holds some of
// it, or ever did. A reader given a source no publisher ever registered
// (a typo) is told so, instead of reading nothing. It fails only if no
// group answers.
func (r *Receiver) Known(ctx context.Context) (bool, error) {
	known := false
	err := r.eachGroupMeta(ctx, func(rep *wire.FetchReply) { known = known || rep.Known })
	return known, err
}

// SourceNames returns the sources the reachable groups hold, sorted, for
// a reader who named one they do not.
func (r *Receiver) SourceNames(ctx context.Context) ([]string, error) {
	var names []string
	var lastErr error
	reached := 0
	for _, g := range r.groups {
		list, err := g.Sources(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		reached++
		for _, s := range list.Sources {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	if reached == 0 {
		return nil, unreachable(lastErr)
	}
	slices.Sort(names)
	return names, nil
}

// groupRetry is the pause between attempts to reach a group that has no
// leader yet, when reading from that group only.
const groupRetry = 200 * time.Millisecond

// fetch asks group g for f. A receiver reading from one group only
// (Config.Group) has no other group to turn to: while that group elects a
// leader, it asks again until ctx ends, instead of giving up after the
// group client's short round of attempts. A store's refusal (an Error
// answer, a refused token or TLS certificate) ends it at once.
func (r *Receiver) fetch(ctx context.Context, g *groupclient.Client, f *wire.Fetch) (*wire.FetchReply, error) {
	for {
		rep, err := g.Fetch(ctx, f)
		var we *wire.Error
		if err == nil {
			r.released.see(rep.Released)
			r.unpublished.see(rep.Unpublished)
		}
		if err == nil || r.cfg.Group == 0 || errors.As(err, &we) || errors.Is(err, wire.ErrUnauthorized) || errors.Is(err, wire.ErrTLSRefused) || ctx.Err() != nil {
			return rep, err
		}
		r.log.Debug("the group has no leader it can reach yet; asking again", "group", r.cfg.Group, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(groupRetry):
		}
	}
}
