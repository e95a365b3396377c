package storegroup

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/logevery"
	"umstore/repository"
	"umstore/storegroup/raftport"
)

// A leader never ships damage, and a follower never blames its own disk
// for damage it received (issue 27, case 6).
//
// The raft port checks every log entry it carries against the checksums
// the entry's command carries (repository.VerifyEntry; raftport's
// EntryCheck), before sending and on arrival. Before sending, an entry
// raft read from the log cache (logCache.holds: the very bytes in memory)
// passes unchecked: it was checked as it came into memory, on arrival from
// the leader or as this store's client server took it; what is checked is
// what was read back from the log file, where damage at rest lives. That
// keeps a leader from decoding every entry it just wrote once per follower.
//
//   - A leader whose copy of an entry is damaged (its raft-wal segment, or
//     its memory) does not send it: raft's AppendEntries to that follower
//     fails, and raft retries after its back-off (10 ms doubling to about
//     10 s), never sending the damage. The damage is this store's own: it
//     is logged as such, counted (umstore_raft_entries_withheld_total),
//     and the leader hands leadership to the most up-to-date member
//     (raft.LeadershipTransfer, at most once per stepDownEvery), which
//     holds the entry and sends its intact copy. The damaged store keeps
//     running as a follower: the entry is applied there already, and the
//     messages it holds are served from intact copies of the other members
//     (repair_damage.go), as for any message damaged at rest. Stopping it
//     and moving its files aside instead would leave the group, while a
//     wiped member catches up, with one member holding everything.
//   - A follower that receives a damaged entry refuses the AppendEntries
//     before raft writes a byte of it: the leader's call fails with the
//     reason, nothing reaches this store's log or repository, and its files
//     are not marked damaged (umstore_raft_entries_refused_total). So when
//     the fsm finds an entry whose payloads fail their checksums
//     (fsm.onLogDamaged), the damage happened here, after the entry was
//     checked on arrival: the store's own file or memory.
//
// Only a checksum proves damage: an entry that carries none (a publisher
// without checksums, a command other than Publish) passes, as before.

// stepDownEvery bounds how often a leader hands leadership away because its
// copy of an entry is damaged: raft retries the send after its back-off,
// and a transfer takes up to an election timeout.
const stepDownEvery = 5 * time.Second

// entryDamage is the store's side of the raft port's entry check.
type entryDamage struct {
	// cache is raft's log cache, once raft is built: the entries it holds
	// in memory were checked already.
	cache       atomic.Pointer[logCache]
	withheldLog logevery.Every
	refusedLog  logevery.Every
	stepDown    logevery.Every // paces leadership transfers, not log lines
}

// verifyLogEntry is the raft port's EntryCheck.Verify: a command entry
// whose payloads do not match the checksums it carries is damaged.
func verifyLogEntry(l *raft.Log) error {
	if l.Type != raft.LogCommand {
		return nil
	}
	return repository.VerifyEntry(l.Data)
}

// entryCheck returns the raft port's check of the entries it carries.
func (s *Store) entryCheck() raftport.EntryCheck {
	s.entryDamage.withheldLog.Interval = 10 * time.Second
	s.entryDamage.refusedLog.Interval = 10 * time.Second
	s.entryDamage.stepDown.Interval = stepDownEvery
	verify := func(l *raft.Log) error {
		if c := s.entryDamage.cache.Load(); c != nil && c.holds(l) {
			return nil // checked when it came into memory
		}
		return verifyLogEntry(l)
	}
	return raftport.EntryCheck{Verify: verify, Withheld: s.entryWithheld, Refused: s.entryRefused}
}

// entryWithheld hears of an entry of this store's log that failed its
// checksums as this store, leading, was about to send it: the damage is
// this store's own. It logs it, and hands leadership to a member that
// holds the entry.
func (s *Store) entryWithheld(target raft.ServerID, index uint64, err error) {
	s.metrics.entriesWithheld.Add(1)
	now := time.Now()
	if dropped, ok := s.entryDamage.withheldLog.Allow(now); ok {
		s.log.Error("this store's copy of a raft log entry is damaged (its log file or its memory): not sending it; the member it was for is not at fault; handing leadership to a member that holds the entry",
			"entry", index, "to", string(target), "log", s.logStore.file.Path, "err", err, "suppressed", dropped)
	}
	r := s.raftNode()
	if r == nil || r.State() != raft.Leader {
		return
	}
	if _, ok := s.entryDamage.stepDown.Allow(now); !ok {
		return
	}
	// Not on raft's replication goroutine, which must go on; the future
	// answers within an election timeout, or when raft shuts down.
	go func() {
		err := r.LeadershipTransfer().Error()
		switch {
		case err == nil:
			s.log.Info("handed leadership away from a damaged raft log entry", "entry", index)
		case errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrRaftShutdown):
		default:
			s.log.Warn("handing leadership away from a damaged raft log entry failed; the entry is still not sent, and the transfer is tried again", "entry", index, "err", err, "retry_in", stepDownEvery.String())
		}
	}()
}

// entryRefused hears of an entry that arrived damaged and was refused:
// the sender's copy or the network is at fault, not this store's files.
func (s *Store) entryRefused(from string, index uint64, err error) {
	s.metrics.entriesRefused.Add(1)
	if dropped, ok := s.entryDamage.refusedLog.Allow(time.Now()); ok {
		s.log.Warn("refused a raft log entry that arrived damaged; this store's files are not at fault, and nothing of it was written", "entry", index, "from", from, "err", err, "suppressed", dropped)
	}
}
