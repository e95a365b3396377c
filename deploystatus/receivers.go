package deploystatus

import (
	"context"
	"time"

	"umstore/internal/groupclient"
	"umstore/storegroup"
	"umstore/wire"
)

// Receiver is one named receiver of a source, as its group records it: the
// last message it consumed, how far behind the source's highest it is,
// whether it is registered (active) and paces the source, and when it was
// last heard from. Its JSON names are relied on by scripts: keep them.
type Receiver struct {
	Name     string `json:"name"`
	Consumed uint64 `json:"consumed"`
	Lag      uint64 `json:"lag"`
	Active   bool   `json:"active"`
	Paced    bool   `json:"paced,omitempty"`
	// LastActivity is RFC 3339, "" if never heard from.
	LastActivity string `json:"last_activity,omitempty"`
}

// askReceivers asks a leader for the receivers of every source; nil if it
// does not answer (an older store answers the unknown frame with an error).
func askReceivers(ctx context.Context, c *groupclient.Client) []wire.SourceReceivers {
	m, err := c.Call(ctx, &wire.ReceiverQuery{})
	if err != nil {
		return nil
	}
	rep, ok := m.(*wire.ReceiverReport)
	if !ok {
		return nil
	}
	return rep.Sources
}

// wireReceivers converts a leader's report of one source's receivers.
func wireReceivers(sr wire.SourceReceivers) []Receiver {
	var out []Receiver
	for _, r := range sr.Receivers {
		rv := Receiver{Name: r.Name, Consumed: r.Consumed, Active: r.Active, Paced: r.Paced}
		if sr.HighSeq > r.Consumed {
			rv.Lag = sr.HighSeq - r.Consumed
		}
		if r.LastActivityUnixNano > 0 {
			rv.LastActivity = time.Unix(0, r.LastActivityUnixNano).UTC().Format(time.RFC3339Nano)
		}
		out = append(out, rv)
	}
	return out
}

// statusReceivers converts the receivers of a store run by the observer.
func statusReceivers(list []storegroup.ReceiverStatus) []Receiver {
	var out []Receiver
	for _, r := range list {
		out = append(out, Receiver{Name: r.Name, Consumed: r.Consumed, Lag: r.Lag, Active: r.Active, Paced: r.Paced, LastActivity: r.LastActivity})
	}
	return out
}
