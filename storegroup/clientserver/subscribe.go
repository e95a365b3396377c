package clientserver

import (
	"context"
	"sync"
	"time"

	"umstore/wire"
)

// subscriptionHeartbeat is how often an idle subscription sends an empty
// Deliver, so the receiver knows the leader is alive and leads.
const subscriptionHeartbeat = time.Second

// startSubscription starts serving the subscription m on rd's connection,
// or answers why not (among the reasons: the connection runs
// MaxReceiversPerConn subscriptions already); the connection waits for it
// (subs) before it closes.
func (cs *Server) startSubscription(ctx context.Context, rd *frameReader, m *wire.Subscribe, subs *sync.WaitGroup, replies *replyQueue) {
	if rep, ok := cs.checkSubscribe(m); !ok {
		replies.put(rep)
		return
	}
	if int(rd.subscribed.Load()) >= cs.Limits.MaxReceiversPerConn {
		replies.put(reply{msg: cs.overLimit(m.ReqID, refusedReceiverLimit, cs.connSubscriptionsMessage())})
		return
	}
	subs.Add(1)
	rd.subscribed.Add(1) // the idle bound is waived while it runs
	go func() {
		defer subs.Done()
		defer rd.subscribed.Add(-1)
		cs.subscribe(ctx, rd.c, m)
	}()
}

// checkSubscribe validates a subscription; a follower redirects it.
func (cs *Server) checkSubscribe(m *wire.Subscribe) (reply, bool) {
	if err := checkSource(m.Source); err != nil {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeBadRequest, Message: err.Error()}}, false
	}
	return cs.notLeader(m.ReqID)
}

// subscribe pushes the source's messages from m.From on as the group
// applies them, until the connection closes or this store stops leading
// (then it sends NotLeader so the receiver follows the new leader).
func (cs *Server) subscribe(ctx context.Context, c *wire.Conn, m *wire.Subscribe) {
	cursor := max(m.From, 1)
	heartbeat := time.NewTicker(subscriptionHeartbeat)
	defer heartbeat.Stop()
	for {
		if !cs.IsLeader() {
			_ = c.Send(cs.redirect(m.ReqID))
			return
		}
		applied := cs.NextApplied()
		info, known, err := cs.Repo.Source(m.Source)
		if err != nil {
			_ = c.Send(&wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()})
			return
		}
		if known && cursor <= info.HighSeq {
			// Damaged messages are never served: see fetch.
			msgs, err := cs.Read(ctx, m.Source, cursor, info.HighSeq, defaultFetchCount, defaultFetchBytes, true)
			if err != nil {
				_ = c.Send(&wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()})
				return
			}
			d := &wire.Deliver{ReqID: m.ReqID, Source: m.Source, Through: info.HighSeq, HighSeq: info.HighSeq, LowSeq: info.LowSeq, Msgs: servedMsgs(msgs), Released: info.TrimmedThrough, Unpublished: wireRanges(info.Unpublished)}
			if cutShort(msgs, info.HighSeq) {
				d.Through = msgs[len(msgs)-1].Seq
			}
			if err := c.Send(d); err != nil {
				return
			}
			cursor = d.Through + 1
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-applied:
		case <-heartbeat.C:
			d := &wire.Deliver{ReqID: m.ReqID, Source: m.Source, Through: cursor - 1, HighSeq: info.HighSeq, LowSeq: info.LowSeq, Released: info.TrimmedThrough, Unpublished: wireRanges(info.Unpublished)}
			if err := c.Send(d); err != nil {
				return
			}
		}
	}
}
