package receiver

import (
	"context"
	"fmt"
	"slices"
	"time"

	"umstore/wire"
)

// fetchTimeout bounds one fetch round trip.
const fetchTimeout = 10 * time.Second

// groupClient keeps one connection to a group's leader for fetches.
type groupClient struct {
	index  int
	addrs  []string
	dialer *wire.Dialer
	hint   string
	conn   *wire.Conn
	reqID  uint64
}

func (g *groupClient) close() {
	if g.conn != nil {
		g.conn.Close()
		g.conn = nil
	}
}

// fetch sends one Fetch to the group's leader, following redirects and
// trying every store once.
func (g *groupClient) fetch(ctx context.Context, f *wire.Fetch) (*wire.FetchReply, error) {
	order := []string{}
	if g.hint != "" {
		order = append(order, g.hint)
	}
	for _, a := range g.addrs {
		if !slices.Contains(order, a) {
			order = append(order, a)
		}
	}
	var lastErr error
	for hops := 0; hops < 2*len(g.addrs)+2; hops++ {
		if g.conn == nil {
			if len(order) == 0 {
				order = append(order, g.addrs...)
			}
			addr := order[0]
			order = order[1:]
			c, _, err := g.dialer.Dial(ctx, addr)
			if err != nil {
				lastErr = err
				continue
			}
			g.conn, g.hint = c, addr
		}
		g.reqID++
		f.ReqID = g.reqID
		_ = g.conn.NetConn().SetDeadline(time.Now().Add(fetchTimeout))
		err := g.conn.Send(f)
		var m wire.Message
		if err == nil {
			m, err = g.conn.Read()
		}
		if err != nil {
			lastErr = err
			g.close()
			continue
		}
		switch m := m.(type) {
		case *wire.FetchReply:
			return m, nil
		case *wire.NotLeader:
			lastErr = fmt.Errorf("store %s is not the leader of group %d", g.hint, g.index)
			g.close()
			if m.Leader != "" {
				order = append([]string{m.Leader}, slices.DeleteFunc(order, func(a string) bool { return a == m.Leader })...)
			} else {
				// An election is under way: give it a moment.
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		case *wire.Error:
			lastErr = m
			g.close()
		default:
			lastErr = fmt.Errorf("%w: fetch answered with frame type %d", wire.ErrMalformed, m.Type())
			g.close()
		}
	}
	return nil, fmt.Errorf("group %d: %w", g.index, lastErr)
}
