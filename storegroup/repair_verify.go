package storegroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"umstore/internal/groupclient"
	"umstore/repository"
	"umstore/wire"
)

// Repair copies what another group holds and this one misses; it never
// compares what both hold. Two groups holding different payloads for one
// sequence number (two publishers given disjoint store lists, a reused
// sequence number) would then go unnoticed, so each pass also compares the
// groups' digests over the ranges both hold (RangeDigest, a SHA-256 of the
// messages in order), a bounded amount per pass, from where the last pass
// stopped. A difference is narrowed down by halving and reported as a
// consistency violation: logged, counted in RepairStatus.Mismatches and
// umstore_repair_mismatches_total. Neither group's copy is changed: which
// payload the publisher meant is not for the stores to guess.

const (
	// verifyChunk is the most messages one RangeDigest request covers.
	verifyChunk = 4096
	// verifyBudget is the most messages compared with one other group per
	// repair pass; what is left waits for the next pass.
	verifyBudget = 16384
	// verifyBudgetBytes is the most payload bytes compared with one other
	// group per pass (2 MiB/s at the default interval): both leaders read
	// and hash what is compared, and 16384 messages of 1 KiB per pass took
	// about 3% of the two cores of a busy dev deployment from live
	// publishing (BENCH.md).
	verifyBudgetBytes = 4 << 20
	// verifyWindow is the range narrowed down by digests before the two
	// groups' messages are fetched and compared one by one.
	verifyWindow = 64
)

// verifyKey names one source of one other group.
type verifyKey struct {
	group  int
	source string
}

// verify compares, within budget payload bytes (and at most verifyBudget
// messages), the messages of theirs' source that both this group and group
// idx hold, past what earlier passes compared. It returns how many payload
// bytes it compared, by this group's average message size.
func (rp *repairer) verify(ctx context.Context, c *groupclient.Client, idx int, theirs wire.SourceState, budgetBytes int) (int, error) {
	ours, ok, err := rp.repo.Source(theirs.Name)
	if err != nil || !ok || ours.Count == 0 {
		return 0, err
	}
	budget, avg := verifyCount(budgetBytes, ours)
	n, err := rp.verifyMessages(ctx, c, idx, theirs, ours, budget)
	return n * avg, err
}

// verifyCount turns a budget of payload bytes into one of messages of
// ours' average size (at least one message, at most verifyBudget).
func verifyCount(budgetBytes int, ours repository.SourceInfo) (count, avg int) {
	avg = 1
	if ours.Count > 0 {
		avg = max(1, int(ours.Bytes/ours.Count))
	}
	return min(verifyBudget, max(1, budgetBytes/avg)), avg
}

// verifyMessages is verify with its budget in messages.
func (rp *repairer) verifyMessages(ctx context.Context, c *groupclient.Client, idx int, theirs wire.SourceState, ours repository.SourceInfo, budget int) (int, error) {
	key := verifyKey{idx, theirs.Name}
	rp.mu.Lock()
	done := rp.verified[key]
	rp.mu.Unlock()
	common := commonRanges(ours, theirs)
	if done > 0 {
		common = subtract(common, []seqRange{{1, done}})
	}
	compared := 0
	for _, r := range common {
		from := r.from
		for from <= r.to && compared < budget {
			if !rp.isLeader() {
				return compared, errors.New("no longer the leader")
			}
			want := min(verifyChunk, budget-compared)
			theirSum, err := rp.peerDigest(ctx, c, theirs.Name, from, r.to, want)
			if err != nil || !theirSum.Known {
				return compared, err
			}
			ourSum, err := rp.repo.RangeDigest(theirs.Name, from, theirSum.Through, 0)
			if err != nil {
				return compared, err
			}
			if ourSum.Count != theirSum.Count {
				// One of the groups no longer holds all of it (retention
				// ran in between): compare again next pass.
				return compared, nil
			}
			if !bytes.Equal(ourSum.Sum[:], theirSum.Sum) {
				if err := rp.locate(ctx, c, idx, theirs.Name, from, theirSum.Through); err != nil {
					return compared, err
				}
			}
			compared += int(theirSum.Count)
			rp.mu.Lock()
			rp.verified[key] = theirSum.Through
			rp.status.Verified += theirSum.Count
			rp.mu.Unlock()
			from = theirSum.Through + 1
		}
	}
	return compared, nil
}

// peerDigest asks group c's leader for its digest of source's [from, to].
func (rp *repairer) peerDigest(ctx context.Context, c *groupclient.Client, source string, from, to uint64, maxCount int) (*wire.RangeDigestReply, error) {
	m, err := c.Call(ctx, &wire.RangeDigest{Source: source, From: from, To: to, MaxCount: maxCount})
	if err != nil {
		return nil, err
	}
	rep, ok := m.(*wire.RangeDigestReply)
	if !ok {
		return nil, fmt.Errorf("%w: range digest answered with frame type %d", wire.ErrMalformed, m.Type())
	}
	return rep, nil
}

// locate narrows a differing range down by halving to a window of
// verifyWindow messages or fewer, compares the window message by message,
// and reports what differs. It finds the first difference of [from, to];
// later ones are found as verification goes on past the window.
func (rp *repairer) locate(ctx context.Context, c *groupclient.Client, idx int, source string, from, to uint64) error {
	for to-from+1 > verifyWindow {
		mid := from + (to-from)/2
		theirs, err := rp.peerDigest(ctx, c, source, from, mid, 0)
		if err != nil {
			return err
		}
		ours, err := rp.repo.RangeDigest(source, from, mid, 0)
		if err != nil {
			return err
		}
		if bytes.Equal(ours.Sum[:], theirs.Sum) {
			from = mid + 1
		} else {
			to = mid
		}
	}
	rep, err := c.Fetch(ctx, &wire.Fetch{Source: source, From: from, To: to, MaxCount: verifyWindow})
	if err != nil {
		return err
	}
	ours, err := rp.repo.Read(source, from, to, verifyWindow, 0)
	if err != nil {
		return err
	}
	held := map[uint64][]byte{}
	for _, m := range ours {
		held[m.Seq] = m.Payload
	}
	var differ []uint64
	for _, m := range rep.Msgs {
		if p, ok := held[m.Seq]; ok && !bytes.Equal(p, m.Payload) {
			differ = append(differ, m.Seq)
		}
	}
	if len(differ) == 0 {
		differ = []uint64{from} // the sums differ; the window's messages moved meanwhile
	}
	rp.reportMismatch(idx, source, differ)
	return nil
}

// reportMismatch records sequence numbers that group idx holds with other
// payloads than this group.
func (rp *repairer) reportMismatch(idx int, source string, seqs []uint64) {
	what := fmt.Sprintf("source %q: group %d holds other payloads than this group for %d sequence number(s) from %d", source, idx, len(seqs), seqs[0])
	rp.mu.Lock()
	rp.status.Mismatches += uint64(len(seqs))
	rp.status.LastMismatch = what
	rp.mu.Unlock()
	fresh := rp.conflict.add(source, seqs)
	if rp.metrics != nil {
		rp.metrics.mismatches.Add(uint64(len(seqs)))
		rp.metrics.conflicts.Add(fresh) // a consistency violation, counted once per number
	}
	rp.log.Error("CONSISTENCY VIOLATION: two groups hold different payloads for the same sequence numbers of a source (two publishers wrote it into different groups, or a sequence number was reused); neither copy is changed, receivers get the payload of the lowest group index that holds it: find which publisher wrote what, and republish under a new source name if needed",
		"source", source, "other_group", idx, "first_seq", seqs[0], "differing", len(seqs), "seqs", seqs)
}

// commonRanges returns the ranges of the source both groups hold.
func commonRanges(ours repository.SourceInfo, theirs wire.SourceState) []seqRange {
	var ourGaps, theirGaps []seqRange
	for _, g := range ours.Gaps {
		ourGaps = append(ourGaps, seqRange{g.From, g.To})
	}
	for _, g := range theirs.Gaps {
		theirGaps = append(theirGaps, seqRange{g.From, g.To})
	}
	ourHeld := heldBy(ours.LowSeq, ours.HighSeq, ourGaps)
	theirHeld := heldBy(theirs.LowSeq, theirs.HighSeq, theirGaps)
	// What both hold is ours less what they do not hold.
	var notTheirs []seqRange
	next := uint64(1)
	for _, r := range normalize(theirHeld) {
		if r.from > next {
			notTheirs = append(notTheirs, seqRange{next, r.from - 1})
		}
		next = r.to + 1
	}
	if next != 0 {
		notTheirs = append(notTheirs, seqRange{next, ^uint64(0)})
	}
	return subtract(ourHeld, notTheirs)
}
