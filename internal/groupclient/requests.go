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
