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

// setReqID numbers a request that Call sends.
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
	case *wire.Ping:
		m.ReqID = id
	case *wire.RangeDigest:
		m.ReqID = id
	case *wire.RegisterReceiver:
		m.ReqID = id
	case *wire.ConsumedAs:
		m.ReqID = id
	case *wire.ReceiverQuery:
		m.ReqID = id
	case *wire.RegisterSource:
		m.ReqID = id
	}
}
