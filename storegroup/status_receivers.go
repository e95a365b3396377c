package storegroup

import (
	"time"

	"umstore/repository"
	"umstore/storegroup/clientserver"
)

// ReceiverStatus is one named receiver of a source, as the store records
// it: how far it consumed, how far behind the source it is, and whether it
// is registered and holds retention back.
type ReceiverStatus struct {
	Name     string `json:"name"`
	Consumed uint64 `json:"consumed"` // the last sequence number it consumed; 0 if none yet
	// Lag is how many sequence numbers the source holds beyond Consumed.
	Lag uint64 `json:"lag"`
	// Active: registered and not expired since (receiver-activity-timeout).
	Active bool `json:"active"`
	// Paced: a receiver-paced persistence receiver; while active it holds
	// a paced source's messages until it consumed them.
	Paced bool `json:"paced,omitempty"`
	// LastActivity is when the receiver was last heard from (the leader's
	// memory on the leader, the last recorded registration or position
	// elsewhere), RFC 3339; "" if never.
	LastActivity string `json:"last_activity,omitempty"`
}

// receiverStatuses describes the receivers of one source and its pacing.
func (s *Store) receiverStatuses(in repository.SourceInfo) (pacing string, out []ReceiverStatus) {
	if st, err := s.repo.Pacing(in.Name); err == nil && st.Mode != repository.PacingNone {
		pacing = clientserver.PacingName(st.Mode)
	}
	rs, err := s.repo.Receivers(in.Name)
	if err != nil {
		return pacing, nil
	}
	leader := s.IsLeader()
	for _, r := range rs {
		st := ReceiverStatus{Name: r.Receiver, Consumed: r.Seq, Active: r.Active, Paced: r.Paced}
		if in.HighSeq > r.Seq {
			st.Lag = in.HighSeq - r.Seq
		}
		last := max(r.RegisteredUnixNano, r.UnixNano)
		if leader {
			if heard, ok := s.receivers.lastHeard(receiverKey{in.Name, r.Receiver}); ok {
				last = max(last, heard.UnixNano())
			}
		}
		if last > 0 {
			st.LastActivity = time.Unix(0, last).UTC().Format(time.RFC3339Nano)
		}
		out = append(out, st)
	}
	return pacing, out
}
