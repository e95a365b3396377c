package clientserver

import (
	"fmt"
	"sync"

	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/wire"
)

// Who may move a receiver's position. A receiver name is owned like a
// source: once a session registered it (RegisterReceiver), only that
// session's acknowledgements (ConsumedAs) record its consumption, and
// ConsumedAs is taken only from the session the leader holds the name for
// (receivers.go). The anonymous Consumed (frame 17, from before receivers
// registered) names no session, so it may record a position only for a
// name no session ever registered: one the leader holds for no session and
// the group records without a session. For any other name it is refused
// (CodeNotRegistered) and nothing is proposed, so a client that knows a
// receiver's name cannot skip messages for it, nor release what a paced
// receiver has not consumed.
//
// The check and the proposal are one step against registrations (owners):
// a RegisterReceiver claims the name under the same lock, so an anonymous
// Consumed either is in the log before the registration (it moved a name
// nobody owned yet) or sees the name held and is refused.

// receiverOwners serialises the anonymous Consumed's check and proposal
// with the claim of a receiver name.
type receiverOwners struct{ mu sync.Mutex }

// anonymousConsumed records the position of m's receiver if no session
// owns the name, and refuses it otherwise.
func (cs *Server) anonymousConsumed(m *wire.Consumed) reply {
	if err := checkSource(m.Source); err != nil {
		return badRequest(m.ReqID, err)
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		return rep
	}
	cs.owners.mu.Lock()
	defer cs.owners.mu.Unlock()
	_, held := cs.Receivers.LastHeard(m.Source, m.Receiver)
	if !held && m.Receiver != "" {
		pos, _, found, err := cs.Repo.Receiver(m.Source, m.Receiver)
		if err != nil {
			return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeInternal, Message: err.Error()}}
		}
		held = found && pos.Session != ""
	}
	if held {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeNotRegistered, Message: fmt.Sprintf(
			"receiver %q of source %q is registered by a receiver session, and only that session records its consumption: register the receiver (RegisterReceiver) and acknowledge with ConsumedAs as its session; nothing was recorded",
			m.Receiver, m.Source)}}
	}
	cmd := repository.EncodeConsumed(repository.Consumed{Source: m.Source, Receiver: m.Receiver, Seq: m.Seq, UnixNano: wallclock.Now().UnixNano()})
	return reply{req: m, future: cs.Proposer.Propose(cmd)}
}
