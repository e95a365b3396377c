package groupclient

import (
	"context"
	"fmt"

	"umstore/wire"
)

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

// Sources asks for every source the group holds: one Sources request per
// page, joined into one list. The pages come from one leader in turn; a
// leader change between them may list a source twice or miss one made
// meanwhile, as any list of a running group may.
func (c *Client) Sources(ctx context.Context) (*wire.SourceList, error) {
	var all *wire.SourceList
	after := ""
	for {
		m, err := c.Call(ctx, &wire.Sources{After: after})
		if err != nil {
			return nil, err
		}
		r, ok := m.(*wire.SourceList)
		if !ok {
			return nil, fmt.Errorf("%w: sources answered with frame type %d", wire.ErrMalformed, m.Type())
		}
		if all == nil {
			all = r
		} else {
			all.Sources = append(all.Sources, r.Sources...)
		}
		if r.Next == "" {
			all.Next = ""
			return all, nil
		}
		if r.Next <= after {
			return nil, fmt.Errorf("%w: a page of sources after %q ends at %q", wire.ErrMalformed, after, r.Next)
		}
		after = r.Next
	}
}
