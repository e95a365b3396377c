package groupclient

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"umstore/wire"
)

// Learning where the stores listen now. A client's list is the deployment
// file it was given; when a host is replaced at another address, the
// stores record the new addresses in their groups' logs, and a client
// with the old file reaches the moved stores through the redirects of the
// stores that stayed. Once those are gone too (the other host dies), no
// store it lists answers. So a client asks the store it reached where the
// group's members listen, and keeps the moves the group recorded: tried
// after the addresses it was given.

// maxLearned bounds the addresses Learn keeps from one answer.
const maxLearned = 8

// learnTimeout bounds one Learn; learnEvery is the least time between two
// of its questions (its caller asks every few seconds: a move must be
// learnt before the other host may fail too).
const (
	learnTimeout = 2 * time.Second
	learnEvery   = time.Second
)

// Learn asks the store last found leading where the group's members
// listen, and keeps the addresses of the moves the group's log recorded
// that the client's list does not hold. It asks at most once per
// learnEvery (it returns nil then), and the Clients of a process for the
// same group at most once per learnEvery between them (the others take
// what it learnt: ten thousand publishers would otherwise ask five
// thousand times a second), over a connection of its own, closed
// after the answer (kept open between questions seconds apart, it would be
// closed as idle by a store with a short idle bound), and may run beside
// Call and Open.
func (c *Client) Learn(ctx context.Context) error {
	addr := c.Leader()
	c.mu.Lock()
	if addr == "" || time.Since(c.learnedAt) < learnEvery {
		c.mu.Unlock()
		return nil
	}
	c.learnedAt = time.Now()
	c.mu.Unlock()
	shared := c.processLearning()
	if learned, fresh := shared.claim(); !fresh {
		c.mu.Lock()
		c.learned = learned // another client of the process asked just now
		c.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, learnTimeout)
	defer cancel()
	conn, _, err := c.dial(ctx, addr)
	if err != nil {
		return fmt.Errorf("group %d: ask %s where the members listen: %w", c.Group, addr, err)
	}
	defer conn.Close()
	m, err := exchange(ctx, conn, &wire.Members{ReqID: 1}, learnTimeout)
	if err != nil {
		return fmt.Errorf("group %d: ask %s where the members listen: %w", c.Group, addr, err)
	}
	list, ok := m.(*wire.MemberList)
	if !ok {
		return nil // an older store, which records no moves
	}
	if want, same := c.sameGroup(list.Group); !same {
		return fmt.Errorf("%w: store %s answered for deployment group %d, the client's other stores for group %d", ErrWrongGroup, addr, list.Group, want)
	}
	shared.keep(c.keepLearned(list.Members))
	return nil
}

// keepLearned keeps the recorded moves among members whose addresses the
// client's list does not hold, and returns them.
func (c *Client) keepLearned(members []wire.MemberAddr) []string {
	var learned []string
	for _, m := range members {
		if len(learned) == maxLearned {
			break // a group has three stores: a longer list is not one
		}
		if m.Moved && m.Recorded && m.ClientAddr != "" && !slices.Contains(c.Addrs, m.ClientAddr) && !slices.Contains(learned, m.ClientAddr) {
			learned = append(learned, m.ClientAddr)
		}
	}
	c.mu.Lock()
	c.learned = learned
	c.mu.Unlock()
	return learned
}

// learnedAddrs returns the addresses Learn kept.
func (c *Client) learnedAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.learned)
}

// KeepLearning calls Learn every interval until ctx ends, skipping the
// rounds in which ready (if set) says the client is not connected. A
// failure is logged at debug level: the next round asks again.
func (c *Client) KeepLearning(ctx context.Context, every time.Duration, ready func() bool, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if ready != nil && !ready() {
			continue
		}
		if err := c.Learn(ctx); err != nil {
			log.Debug("could not ask the group where its members listen", "group", c.Group, "err", err)
		}
	}
}
