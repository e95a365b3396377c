package storegroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"umstore/internal/groupclient"
	"umstore/repository"
	"umstore/storegroup/proposal"
	"umstore/wire"
)

// RepairStatus reports the intergroup repair of a store while it leads.
type RepairStatus struct {
	Passes           uint64 `json:"passes"`
	Pending          uint64 `json:"pending_messages"` // missing messages found by the last pass
	RepairedMessages uint64 `json:"repaired_messages"`
	RepairedBytes    uint64 `json:"repaired_bytes"`
	Conflicts        uint64 `json:"conflicts"` // payloads that differed from the one held (kept, never overwritten)
	// FollowedReleases counts the messages this group dropped because
	// another group's retention had released them (repair_release.go).
	FollowedReleases uint64 `json:"followed_releases,omitempty"`
	// Verified counts messages compared by digest with another group's
	// (repair_verify.go); Mismatches, the sequence numbers found to hold
	// another payload there: a consistency violation, LastMismatch says
	// the latest.
	Verified     uint64 `json:"verified_messages"`
	Mismatches   uint64 `json:"mismatches"`
	LastMismatch string `json:"last_mismatch,omitempty"`
	// IntergroupConflicts counts the distinct sequence numbers found so
	// (repair_conflicts.go): what receivers resolve by the lowest group's
	// payload.
	IntergroupConflicts uint64 `json:"intergroup_conflicts"`
	LastError           string `json:"last_error,omitempty"`
	// Damage counts the messages this store found damaged at rest and
	// the copies it serves in their place (repair_damage.go).
	Damage DamageStatus `json:"damage_at_rest"`
}

// repairer copies into this group what other groups hold and it misses:
// messages published while the group had no quorum, or released by a
// publisher before this group confirmed them. It runs on the leader only,
// proposes copies through the group's own log (so every member applies
// them), and is throttled so live publishing keeps priority.
type repairer struct {
	repairDeps
	clients  map[int]*groupclient.Client
	damage   *damageRepairer      // copies of messages damaged in this store's files
	verified map[verifyKey]uint64 // compared by digest up to here, while leading (repair_verify.go)
	conflict conflictBook         // numbers another group holds otherwise (repair_conflicts.go)
	// missing are the ranges the last pass found missing here, per other
	// group and source: a pass copies only what was missing in the pass
	// before too (stillMissing).
	missing  map[missingKey][]seqRange
	peerHigh map[string]uint64 // each source's highest the other groups were seen to hold (peerHighest)

	mu       sync.Mutex
	status   RepairStatus
	ledSince time.Time // when this store's current leadership began, as run saw it; zero while not leading
}

// repairDeps is what repair needs from its store (built in
// Store.wireHelpers, open.go).
type repairDeps struct {
	log      *slog.Logger
	repo     *repository.Repo   // what this group holds
	proposer *proposal.Proposer // the copies go through the group's log
	metrics  *storeMetrics      // mismatches found; nil in tests
	isLeader func() bool
	groups   []PeerGroup  // the other groups, to copy from
	dialer   *wire.Dialer // how to reach them
	name     string       // this store's name
	group    int          // this store's group
	members  []Member     // every member of the group: copies of damaged messages

	interval               time.Duration // RepairInterval; 0 disables repair
	rate                   int           // RepairBytesPerSecond; 0 means no limit
	batchCount, batchBytes int           // RepairBatchCount, RepairBatchBytes: one fetch

	// addrs, if set, gives a group's client addresses where its stores
	// listen now (members_book.go), taken before each pass; nil keeps groups'.
	addrs func(group int) []string
}

func newRepairer(d repairDeps) *repairer {
	rp := &repairer{repairDeps: d, clients: map[int]*groupclient.Client{}, verified: map[verifyKey]uint64{}, peerHigh: map[string]uint64{}, missing: map[missingKey][]seqRange{}}
	for _, g := range d.groups {
		var addrs []string
		for _, m := range g.Members {
			addrs = append(addrs, m.ClientAddr)
		}
		rp.clients[g.Index] = groupclient.New(g.Index, addrs, d.dialer)
	}
	rp.damage = newDamageRepairer(damageDeps{log: d.log, name: d.name, group: d.group, repo: d.repo, members: d.members, groups: d.groups, dialer: d.dialer})
	return rp
}

// Status returns a copy of the repair counters.
func (rp *repairer) Status() RepairStatus {
	rp.mu.Lock()
	st := rp.status
	rp.mu.Unlock()
	st.Damage = rp.damage.Status()
	st.IntergroupConflicts = rp.conflict.total()
	return st
}

// run repairs every RepairInterval while this store leads, and looks for
// copies of the messages damaged in this store's files whether it leads or
// not.
func (rp *repairer) run(ctx context.Context) {
	var damage sync.WaitGroup
	damage.Add(1)
	go func() { defer damage.Done(); rp.damage.run(ctx) }()
	defer damage.Wait()
	defer func() {
		for _, c := range rp.clients {
			c.Close()
		}
	}()
	if len(rp.clients) == 0 || rp.interval <= 0 {
		return
	}
	t := time.NewTicker(rp.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !rp.isLeader() {
			rp.mu.Lock()
			clear(rp.verified) // the next leadership compares afresh
			clear(rp.missing)
			rp.ledSince = time.Time{}
			rp.mu.Unlock()
			continue
		}
		rp.mu.Lock()
		if rp.ledSince.IsZero() {
			rp.ledSince = time.Now()
		}
		rp.mu.Unlock()
		err := rp.pass(ctx)
		rp.mu.Lock()
		rp.status.Passes++
		rp.status.LastError = ""
		if err != nil && ctx.Err() == nil {
			rp.status.LastError = err.Error()
		}
		rp.mu.Unlock()
	}
}

// pass compares this group with every other group once, copies what is
// missing and compares, by digest, some of what both hold
// (repair_verify.go).
func (rp *repairer) pass(ctx context.Context) error {
	var errs []error
	var pending uint64
	for idx, c := range rp.clients {
		if rp.addrs != nil {
			c.Addrs = rp.addrs(idx) // a replaced host's stores where they listen now
		}
		budget := verifyBudgetBytes
		list, err := c.Sources(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("group %d: %w", idx, err))
			continue
		}
		rp.sawPeers(list.Sources)
		for _, theirs := range list.Sources {
			ours, ok, err := rp.repo.Source(theirs.Name)
			if err != nil {
				return err
			}
			var op *repository.SourceInfo
			if ok {
				op = &ours
			}
			missing := missingRanges(op, theirs)
			for _, m := range missing {
				pending += m.to - m.from + 1
			}
			for _, m := range rp.stillMissing(idx, theirs.Name, missing) {
				if err := rp.copyRange(ctx, c, idx, theirs, m); err != nil {
					errs = append(errs, fmt.Errorf("copy %s %d-%d from group %d: %w", theirs.Name, m.from, m.to, idx, err))
					break
				}
			}
			// After the copies: the source exists here, and what lies
			// below them is released, not a gap (repair_release.go).
			if err := rp.follow(idx, theirs); err != nil {
				errs = append(errs, fmt.Errorf("release %s through %d as group %d did: %w", theirs.Name, theirs.Released, idx, err))
			}
			if ok && budget > 0 {
				n, err := rp.verify(ctx, c, idx, theirs, budget)
				budget -= n
				if err != nil {
					errs = append(errs, fmt.Errorf("compare %s with group %d: %w", theirs.Name, idx, err))
				}
			}
		}
	}
	rp.mu.Lock()
	rp.status.Pending = pending
	rp.mu.Unlock()
	return errors.Join(errs...)
}

// copyRange fetches a range of theirs' source from group idx and proposes
// what it gets, one raft entry per contiguous run, at most
// RepairBytesPerSecond. After the first copies it follows the other
// group's release (once this store has led long enough,
// repair_release.go), so the numbers below them do not stay a gap while a
// long copy goes on.
func (rp *repairer) copyRange(ctx context.Context, c *groupclient.Client, idx int, theirs wire.SourceState, m seqRange) error {
	source := theirs.Name
	followed := false
	next := m.from
	for next <= m.to {
		if !rp.isLeader() {
			return errors.New("no longer the leader")
		}
		rep, err := c.Fetch(ctx, &wire.Fetch{Source: source, From: next, To: m.to, MaxCount: rp.batchCount, MaxBytes: rp.batchBytes})
		if err != nil {
			return err
		}
		rp.sawPeer(source, rep.HighSeq) // fresh while a long copy lasts
		start := time.Now()
		bytes := 0
		msgs := rp.intactOnly(source, rep.Msgs, c.Addrs)
		for i := 0; i < len(msgs); {
			j := i + 1
			for j < len(msgs) && msgs[j].Seq == msgs[j-1].Seq+1 {
				j++
			}
			if err := rp.propose(source, msgs[i:j]); err != nil {
				return err
			}
			for _, msg := range msgs[i:j] {
				bytes += len(msg.Payload)
			}
			i = j
		}
		if !followed && len(msgs) > 0 {
			followed = true
			if err := rp.follow(idx, theirs); err != nil {
				return err
			}
		}
		if rep.Through < next || rep.Through >= m.to {
			return nil
		}
		next = rep.Through + 1
		rp.throttle(ctx, bytes, start)
	}
	return nil
}

// intactOnly drops, counted and logged, the copies whose payload does not
// match the checksum they came with: a damaged copy is never proposed. The
// message stays missing here, and a later pass fetches it again (the other
// group heals its own damage meanwhile).
func (rp *repairer) intactOnly(source string, msgs []wire.Msg, from []string) []wire.Msg {
	out := msgs[:0:0]
	for _, m := range msgs {
		if !m.Intact() {
			rp.damage.copyRefused(source, m, from)
			continue
		}
		out = append(out, m)
	}
	return out
}

// propose stores msgs (consecutive, intact) through the group's log, with
// their checksums when every one came with one (a group older than
// checksums sends none; apply then computes them).
func (rp *repairer) propose(source string, msgs []wire.Msg) error {
	first := msgs[0].Seq
	payloads := make([][]byte, len(msgs))
	checksums := make([]uint32, len(msgs))
	for i, m := range msgs {
		payloads[i], checksums[i] = m.Payload, m.CRC
	}
	if slices.Contains(checksums, 0) {
		checksums = nil
	}
	f := rp.proposer.Propose(repository.EncodePublish(repository.Publish{Source: source, FirstSeq: first, Payloads: payloads, Checksums: checksums}))
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return errors.New("no longer the leader")
		}
		return err
	}
	res, ok := f.Response().(*repository.Result)
	if !ok {
		return fmt.Errorf("repair proposal failed: %v", f.Response())
	}
	if res.Err != nil {
		return res.Err
	}
	p := res.Publish
	var bytes uint64
	for _, b := range payloads {
		bytes += uint64(len(b))
	}
	rp.mu.Lock()
	rp.status.RepairedMessages += uint64(p.Stored)
	rp.status.RepairedBytes += bytes
	rp.status.Conflicts += uint64(p.Conflicts)
	rp.mu.Unlock()
	if p.Conflicts > 0 {
		rp.log.Error("CONSISTENCY VIOLATION: another group holds a different payload for sequence numbers this group already holds; kept ours, copied nothing over them",
			"source", source, "first_conflict", p.FirstConflict, "conflicts", p.Conflicts)
	}
	if p.Stored > 0 {
		rp.log.Info("repaired messages from another group", "source", source, "first", first, "stored", p.Stored)
	}
	return nil
}

// throttle sleeps so that copying `bytes` since start does not exceed
// RepairBytesPerSecond.
func (rp *repairer) throttle(ctx context.Context, bytes int, start time.Time) {
	rate := rp.rate
	if rate <= 0 {
		return
	}
	want := time.Duration(float64(bytes) / float64(rate) * float64(time.Second))
	if d := want - time.Since(start); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

// sawPeers records how far another group holds each of its sources.
func (rp *repairer) sawPeers(sources []wire.SourceState) {
	for _, src := range sources {
		rp.sawPeer(src.Name, src.HighSeq)
	}
}

// sawPeer records that another group holds source up to high.
func (rp *repairer) sawPeer(source string, high uint64) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.peerHigh[source] = max(rp.peerHigh[source], high)
}

// peerHighest returns the highest sequence number of source another group
// was seen to hold by a repair pass of this store, 0 if none: how far the
// client server lets a Publish jump (clientserver's seqjump.go). It only
// grows: a group's highest never goes down, and the bound it gives only
// needs to be generous.
func (rp *repairer) peerHighest(source string) uint64 {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.peerHigh[source]
}
