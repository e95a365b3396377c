package raftport

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// ErrEntryDamaged: a raft log entry's bytes do not match the checksums it
// carries, so the port did not carry it (EntryCheck).
var ErrEntryDamaged = errors.New("raft log entry damaged")

// EntryCheck has the port check every log entry it carries, both ways, so
// that damage in one member's copy of the log never reaches another:
//
//   - an entry this store is about to send (it leads) that fails Verify is
//     not sent: the AppendEntries call fails before a byte leaves, raft
//     retries it after its back-off, and Withheld hears of it. The damage
//     is this store's own (its log file or its memory), never the
//     follower's.
//   - an entry that arrives (this store follows) and fails Verify is
//     refused before raft sees it: the leader's call fails with the reason,
//     nothing is written to this store's log, and Refused hears of it. The
//     damage is the sender's or the network's, never this store's files.
//
// Heartbeats carry no entries and pass unchecked.
type EntryCheck struct {
	// Verify returns an error for an entry whose bytes changed since they
	// were checked on receipt; nil for an intact one.
	Verify func(*raft.Log) error
	// Withheld hears of an entry not sent to target. It runs on raft's
	// replication goroutine: it must not block.
	Withheld func(target raft.ServerID, index uint64, err error)
	// Refused hears of an entry that arrived damaged from the member named
	// from. It runs on the port's RPC filter: it must not block.
	Refused func(from string, index uint64, err error)
}

// CheckEntries has the transport check the entries it sends and receives
// (EntryCheck). It must be called before raft starts; the port's filter
// already reads it (a peer's RPC may arrive before raft runs), hence the
// atomic pointer.
func (g *Transport) CheckEntries(c EntryCheck) { g.entries.Store(&c) }

// firstDamaged returns the first of entries that fails the check, and why.
func (g *Transport) firstDamaged(entries []*raft.Log) (*raft.Log, error) {
	c := g.entries.Load()
	if c == nil || c.Verify == nil {
		return nil, nil
	}
	for _, l := range entries {
		if err := c.Verify(l); err != nil {
			return l, err
		}
	}
	return nil, nil
}

// checkOutgoing refuses to send args to id if one of its entries is
// damaged.
func (g *Transport) checkOutgoing(id raft.ServerID, args *raft.AppendEntriesRequest) error {
	l, err := g.firstDamaged(args.Entries)
	if l == nil {
		return nil
	}
	err = fmt.Errorf("%w: this store's copy of entry %d (term %d) is damaged, not sent to %s: %w", ErrEntryDamaged, l.Index, l.Term, id, err)
	if c := g.entries.Load(); c.Withheld != nil {
		c.Withheld(id, l.Index, err)
	}
	return err
}

// refuseDamaged answers an AppendEntries whose entries arrived damaged
// with an error, and reports whether it did. The answer says nothing of
// this store's log (Success false, the request's term): raft's leader sees
// the error first, and retries after its back-off.
func (g *Transport) refuseDamaged(rpc raft.RPC, req *raft.AppendEntriesRequest, header raft.RPCHeader) bool {
	l, err := g.firstDamaged(req.Entries)
	if l == nil {
		return false
	}
	from := string(req.ID)
	err = fmt.Errorf("%w: entry %d (term %d) from %s arrived damaged at %s and was refused; the sender's copy or the network is at fault: %w", ErrEntryDamaged, l.Index, l.Term, from, g.localID, err)
	if c := g.entries.Load(); c.Refused != nil {
		c.Refused(from, l.Index, err)
	}
	rpc.Respond(&raft.AppendEntriesResponse{RPCHeader: header, Term: req.Term, Success: false}, err)
	return true
}
