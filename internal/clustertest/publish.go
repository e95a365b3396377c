package clustertest

import (
	"context"
	"fmt"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// PublishDirect stores payloads as messages first, first+1, ... of source in
// one group only, as a publisher that reached only that group would have:
// on one connection to the group's leader it registers the source, sends
// one Publish and waits for its Ack, then says goodbye, and it returns once
// the group has recorded the goodbye, so the source is free for the next
// publisher at once. A store accepts a Publish only on a connection that
// registered its source; this is the short way for tests that need a group
// to hold what no Publisher would send (gaps, one group ahead of another).
func (c *Cluster) PublishDirect(ctx context.Context, group int, source string, first uint64, payloads [][]byte) error {
	session := fmt.Sprintf("direct-%d-%d", group, first)
	gc := groupclient.New(group, c.Addrs()[group-1], &wire.Dialer{Client: "clustertest direct publisher", Timeout: 2 * time.Second})
	defer gc.Close()
	conn, _, err := gc.Open(ctx, &wire.Register{ReqID: 1, Source: source, Session: session}, groupclient.OpenOptions{Reply: wire.TypeRegistered})
	if err != nil {
		return fmt.Errorf("register %q in group %d: %w", source, group, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := conn.Send(&wire.Publish{ReqID: 2, Source: source, FirstSeq: first, Payloads: payloads}); err != nil {
		return fmt.Errorf("publish %q in group %d: %w", source, group, err)
	}
	m, err := conn.Read()
	if err != nil {
		return fmt.Errorf("publish %q in group %d: %w", source, group, err)
	}
	if ack, ok := m.(*wire.Ack); !ok || ack.ReqID != 2 {
		return fmt.Errorf("publish %q in group %d: the leader answered %#v, want an Ack", source, group, m)
	}
	if err := conn.Send(&wire.KeepAlive{Source: source, Session: session, Leaving: true}); err != nil {
		return fmt.Errorf("goodbye on %q in group %d: %w", source, group, err)
	}
	for {
		if l := c.Leader(group); l != nil {
			if info, ok, _ := l.Repository().Source(source); ok && info.Session != session {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %d did not record the goodbye on %q: %w", group, source, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
