package groupclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"umstore/wire"
)

// ErrWrongGroup means a store given as a member of one group answered
// that it belongs to another: the client's store list mixes up the
// groups (a UM --store list with a wrong or missing group index).
var ErrWrongGroup = errors.New("store belongs to another group")

// headStart is how long a store has to complete its handshake before the
// next store is dialed as well. A paused store (SIGSTOP) accepts TCP
// connections but never answers; a live one answers in well under a
// millisecond on a LAN.
const headStart = 150 * time.Millisecond

// suspectFor is how long a store whose handshake timed out is tried after
// the others.
const suspectFor = 10 * time.Second

// dialRace connects to the first store of order that completes its
// handshake. It dials order[0] first; when that has neither answered nor
// failed within headStart, it dials the next one too, and so on, so that a
// paused store costs the others a head start, not its whole timeout. A
// store that fails at once (connection refused) lets the next one start at
// once; a refused token ends the race (every store checks the same one).
// It returns the winner, how many stores of order it dialed, and, when none
// answered, the last error.
func (c *Client) dialRace(ctx context.Context, order []string) (link, int, error) {
	if len(order) == 0 {
		return link{}, 0, errors.New("no store address")
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		l   link
		err error
	}
	results := make(chan result, len(order))
	started, pending := 0, 0
	waiting := map[string]time.Time{} // stores dialed and not answered yet, and since when
	start := func() {
		addr := order[started]
		started++
		pending++
		waiting[addr] = time.Now()
		go func() {
			conn, w, err := c.dial(rctx, addr)
			if err == nil && w != nil {
				if other, ok := c.sameGroup(w.Group); !ok {
					conn.Close()
					conn = nil
					err = fmt.Errorf("%w: store %s (%s) is a store of group %d, listed with the stores of group %d as one group (%d in this list): list every group's stores under its own index (or use the deployment file)", ErrWrongGroup, addr, w.Store, w.Group, other, c.Group)
				}
			}
			if err != nil && isTimeout(err) && rctx.Err() == nil {
				c.suspect(addr)
			}
			results <- result{link{conn: conn, addr: addr}, err}
		}()
	}
	// drain closes the connections of the stores that answer after the
	// race is over.
	drain := func(n int) {
		go func() {
			for range n {
				if r := <-results; r.l.conn != nil {
					r.l.conn.Close()
				}
			}
		}()
	}
	start()
	timer := time.NewTimer(headStart)
	defer timer.Stop()
	var lastErr error
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			delete(waiting, r.l.addr)
			if r.err == nil {
				// A store still silent a head start after it was dialed,
				// while another answered, is paused or cut off.
				for addr, since := range waiting {
					if time.Since(since) >= headStart {
						c.suspect(addr)
					}
				}
				drain(pending)
				c.clearSuspect(r.l.addr)
				return r.l, started, nil
			}
			lastErr = r.err
			if errors.Is(r.err, wire.ErrUnauthorized) {
				cancel()
				drain(pending)
				return link{}, started, r.err
			}
			if started < len(order) {
				start()
				timer.Reset(headStart)
			}
		case <-timer.C:
			if started < len(order) {
				start()
				timer.Reset(headStart)
			}
		case <-ctx.Done():
			cancel()
			drain(pending)
			return link{}, started, ctx.Err()
		}
	}
	return link{}, started, lastErr
}

// isTimeout reports whether a dial failed for want of an answer in time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// suspect records that the store at addr did not answer in time.
func (c *Client) suspect(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.suspects == nil {
		c.suspects = map[string]time.Time{}
	}
	c.suspects[addr] = time.Now().Add(suspectFor)
}

func (c *Client) clearSuspect(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.suspects, addr)
}

// suspected reports whether addr recently failed to answer in time.
func (c *Client) suspected(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.suspects[addr]
	return ok && time.Now().Before(until)
}

// sameGroup checks that a store that answered belongs to the same
// deployment group as the client's other stores: the first to answer
// decides which that is (a store list labels groups as it likes, so the
// client's own index says nothing about the deployment's). It returns the
// group seen before when group differs from it.
func (c *Client) sameGroup(group int) (int, bool) {
	if group == 0 {
		return 0, true // an older store that does not say
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deploymentGroup == 0 {
		c.deploymentGroup = group
	}
	return c.deploymentGroup, c.deploymentGroup == group
}
