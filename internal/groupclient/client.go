// Package groupclient talks request/reply to the leader of one store group:
// it keeps one connection, follows NotLeader redirects, tries every store of
// the group, and waits out elections briefly. The receiver SDK and the
// stores' intergroup repair share it.
package groupclient

import (
	"context"
	"fmt"
	"slices"
	"time"

	"umstore/wire"
)

// CallTimeout bounds one request/reply round trip.
const CallTimeout = 10 * time.Second

// Client is a connection to one group's leader. It is not safe for
// concurrent use: one request at a time.
type Client struct {
	// Group is the group's index, for error messages.
	Group int
	// Addrs are the client addresses of the group's stores.
	Addrs  []string
	Dialer *wire.Dialer

	hint  string
	conn  *wire.Conn
	reqID uint64
}

// New returns a client for the group's stores.
func New(group int, addrs []string, d *wire.Dialer) *Client {
	return &Client{Group: group, Addrs: addrs, Dialer: d}
}

// Close closes the connection; the next call reconnects.
func (c *Client) Close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// Leader returns the address of the store the client last reached.
func (c *Client) Leader() string { return c.hint }

// Call sends req (its ReqID is set here) to the group's leader and returns
// the reply. A NotLeader answer is followed to the leader; every store is
// tried before giving up. A wire *Error reply is returned as the error.
func (c *Client) Call(ctx context.Context, req wire.Message) (wire.Message, error) {
	order := c.order()
	var lastErr error
	for hops := 0; hops < 2*len(c.Addrs)+2; hops++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.conn == nil {
			if len(order) == 0 {
				order = append(order, c.Addrs...)
			}
			addr := order[0]
			order = order[1:]
			conn, _, err := c.Dialer.Dial(ctx, addr)
			if err != nil {
				lastErr = err
				continue
			}
			c.conn, c.hint = conn, addr
		}
		c.reqID++
		setReqID(req, c.reqID)
		deadline := time.Now().Add(CallTimeout)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		_ = c.conn.NetConn().SetDeadline(deadline)
		err := c.conn.Send(req)
		var m wire.Message
		if err == nil {
			m, err = c.conn.Read()
		}
		if err != nil {
			lastErr = err
			c.Close()
			continue
		}
		switch m := m.(type) {
		case *wire.NotLeader:
			lastErr = fmt.Errorf("store %s is not the leader of group %d", c.hint, c.Group)
			c.Close()
			if m.Leader != "" {
				order = append([]string{m.Leader}, slices.DeleteFunc(order, func(a string) bool { return a == m.Leader })...)
				continue
			}
			// An election is under way: give it a moment.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		case *wire.Error:
			c.Close()
			return nil, fmt.Errorf("group %d: %w", c.Group, m)
		default:
			return m, nil
		}
	}
	return nil, fmt.Errorf("group %d: no leader reachable: %w", c.Group, lastErr)
}

func (c *Client) order() []string {
	out := []string{}
	if c.hint != "" {
		out = append(out, c.hint)
	}
	for _, a := range c.Addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Fetch is Call for a Fetch request.
func (c *Client) Fetch(ctx context.Context, f *wire.Fetch) (*wire.FetchReply, error) {
	m, err := c.Call(ctx, f)
	if err != nil {
		return nil, err
	}
	r, ok := m.(*wire.FetchReply)
	if !ok {
		return nil, fmt.Errorf("%w: fetch answered with frame type %d", wire.ErrMalformed, m.Type())
	}
	return r, nil
}

// Sources is Call for a Sources request.
func (c *Client) Sources(ctx context.Context) (*wire.SourceList, error) {
	m, err := c.Call(ctx, &wire.Sources{})
	if err != nil {
		return nil, err
	}
	r, ok := m.(*wire.SourceList)
	if !ok {
		return nil, fmt.Errorf("%w: sources answered with frame type %d", wire.ErrMalformed, m.Type())
	}
	return r, nil
}

func setReqID(m wire.Message, id uint64) {
	switch m := m.(type) {
	case *wire.Fetch:
		m.ReqID = id
	case *wire.Sources:
		m.ReqID = id
	case *wire.Register:
		m.ReqID = id
	case *wire.Consumed:
		m.ReqID = id
	case *wire.Probe:
		m.ReqID = id
	case *wire.Publish:
		m.ReqID = id
	}
}
