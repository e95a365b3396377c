package groupclient

import (
	"context"
	"slices"
	"time"

	"umstore/wire"
)

// Telling a slow leader from a replaced one. A store answers a connection's
// requests in order, so a leader that is busy committing a large proposal
// and one that is paused look the same from its connection: silence. The
// other members can tell them apart: while the silent store still leads,
// none of them does; once it is gone, one of them leads within an election.

// LeaderElsewhere asks every store of the group except the one at silent,
// in parallel and over short connections of their own, whether it leads
// the group and serves requests now. It returns the address of the first
// that says so, or ok false when none did within timeout (the silent
// leader is slow, or the group is electing). The leader hint is left to
// the caller.
func (c *Client) LeaderElsewhere(ctx context.Context, silent string, timeout time.Duration) (addr string, ok bool) {
	others := slices.DeleteFunc(c.order(), func(a string) bool { return a == silent })
	if len(others) == 0 {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	leads := make(chan string, len(others))
	for _, a := range others {
		go func() {
			if c.leads(ctx, a, timeout) {
				leads <- a
			} else {
				leads <- ""
			}
		}()
	}
	for range others {
		if a := <-leads; a != "" {
			return a, true
		}
	}
	return "", false
}

// leads reports whether the store at addr answers a Ping as the serving
// leader of the client's deployment group.
func (c *Client) leads(ctx context.Context, addr string, timeout time.Duration) bool {
	conn, w, err := c.dial(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if w != nil {
		if _, same := c.sameGroup(w.Group); !same {
			return false
		}
	}
	m, err := exchange(ctx, conn, &wire.Ping{ReqID: 1}, timeout)
	if err != nil {
		return false
	}
	pong, ok := m.(*wire.Pong)
	if !ok || !pong.Leading {
		return false
	}
	_, same := c.sameGroup(pong.Group)
	return same
}
