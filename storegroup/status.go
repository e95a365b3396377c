package storegroup

import (
	"strconv"

	"github.com/hashicorp/raft"

	"umstore/internal/version"
	"umstore/repository"
)

// Status is a point-in-time view of a store for operators and tests.
type Status struct {
	Name         string `json:"name"`
	Group        int    `json:"group"`
	GroupID      string `json:"group_id"`
	State        string `json:"state"` // raft state, "starting" before raft runs, "failed" after a fatal error
	Leader       string `json:"leader"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	// SnapshotIndex is the index of the latest local snapshot: log entries
	// before SnapshotIndex-TrailingLogs may be gone, so a member further
	// behind is brought back by sending it the snapshot.
	SnapshotIndex uint64 `json:"snapshot_index"`
	HasState      bool   `json:"has_state"`
	// LastStop says how the store stopped before this run: clean (graceful),
	// dirty (crash or kill: raft replays its log) or new.
	LastStop string `json:"last_stop"`
	// CatchingUp is true while a store that joined empty has not reached
	// CatchUpTarget (the group's last entry when it joined).
	CatchingUp    bool   `json:"catching_up"`
	CatchUpTarget uint64 `json:"catch_up_target,omitempty"`
	// CatchUpBytes is, while CatchingUp, what the store has received from
	// its group since it opened: snapshot streams and entry payloads.
	CatchUpBytes uint64 `json:"catch_up_bytes,omitempty"`
	// WaitingToJoin is true while an empty store waits for its turn: another
	// empty store of its group on this host is still catching up.
	WaitingToJoin bool   `json:"waiting_to_join,omitempty"`
	LastTerm      uint64 `json:"last_term"`
	// KnownGroups are the identities of the other groups this store's
	// group has recorded, by group index.
	KnownGroups map[int]string `json:"known_groups,omitempty"`
	// Sources is what this store holds of each source, at most
	// maxSourcesListed of them (status_sources.go): the sources with
	// messages, gaps or records first, in name order. SourcesTotal is how
	// many the store holds; when it is more, the rest are left out.
	Sources      []SourceStatus `json:"sources"`
	SourcesTotal int            `json:"sources_total"`
	// Repair is the intergroup repair's progress (it runs on the leader).
	Repair RepairStatus `json:"repair"`
	// PreferredHost is where the group prefers to be led from ("" for no
	// preference); Placement, on the leader, says whether leadership is
	// there or when it will move (leadership.go).
	PreferredHost string `json:"preferred_host,omitempty"`
	Placement     string `json:"placement,omitempty"`
	// PolicyDigest is the digest of the policy this store runs;
	// PolicyMismatch, on the leader, lists the members that run another
	// and how it differs.
	PolicyDigest   string   `json:"policy_digest,omitempty"`
	Policy         string   `json:"policy,omitempty"`
	PolicyMismatch []string `json:"policy_mismatch,omitempty"`
	Error          string   `json:"error,omitempty"`
	// Moved lists the members of the group that listen elsewhere than
	// this store's deployment file says (a replaced host); MoveRefused
	// says which members refuse this store's own address, and why, while
	// they do (members_book.go).
	Moved       []MovedMember `json:"moved,omitempty"`
	MoveRefused string        `json:"move_refused,omitempty"`
	// Version is the build of this store's binary (internal/version);
	// FormatLevel the format level it reads, ActiveLevel its group's
	// active level as this store applied it (levels.go). LevelHeldBy, on
	// the leader while ActiveLevel is below FormatLevel, lists the
	// members that keep it there and why.
	Version     string   `json:"version"`
	FormatLevel int      `json:"format_level"`
	ActiveLevel int      `json:"active_level"`
	LevelHeldBy []string `json:"level_held_by,omitempty"`
}

// SourceStatus is what a store holds of one source.
type SourceStatus struct {
	Name    string `json:"name"`
	HighSeq uint64 `json:"high_seq"`
	LowSeq  uint64 `json:"oldest_seq"` // oldest retained
	// TrimmedThrough: retention released every message up to here.
	TrimmedThrough uint64 `json:"trimmed_through,omitempty"`
	Count          uint64 `json:"count"`
	Bytes          uint64 `json:"bytes"`
	// Gaps are the ranges this group does not hold that no publisher
	// declared unused; Unpublished the ones it did (never published, not
	// lost: repository.Unpublished).
	Gaps        int         `json:"gaps"`
	GapRanges   [][2]uint64 `json:"gap_ranges,omitempty"` // the first few
	Unpublished int         `json:"unpublished,omitempty"`
	// Conflicts counts the sequence numbers another group was found to
	// hold with another payload (repair_conflicts.go).
	Conflicts         uint64      `json:"conflicts,omitempty"`
	UnpublishedRanges [][2]uint64 `json:"unpublished_ranges,omitempty"` // the first few
	// Pacing is the source's receiver-paced persistence mode, "" when it
	// has none (status_receivers.go).
	Pacing string `json:"pacing,omitempty"`
	// Receivers are the source's named receivers, as recorded.
	Receivers []ReceiverStatus `json:"receivers,omitempty"`
}

// maxGapsShown bounds the gap ranges listed per source in a status.
const maxGapsShown = 10

// Status reports the store's current state, with every source it holds.
func (s *Store) Status() Status {
	st := s.statusCore()
	st.Sources, st.SourcesTotal = s.sourceStatuses()
	return st
}

// sourceStatuses is what the store holds of the sources it lists (at most
// maxSourcesListed, status_sources.go), and how many it holds: a read of
// every source, which statusCore leaves out.
func (s *Store) sourceStatuses() ([]SourceStatus, int) {
	infos, err := s.repo.Sources()
	if err != nil {
		return nil, 0
	}
	total := len(infos)
	infos = sourcesToList(infos, maxSourcesListed)
	var out []SourceStatus
	for _, in := range infos {
		gaps := lostGaps(in)
		ss := SourceStatus{Name: in.Name, HighSeq: in.HighSeq, LowSeq: in.LowSeq, TrimmedThrough: in.TrimmedThrough, Count: in.Count, Bytes: in.Bytes,
			Gaps: len(gaps), GapRanges: firstRanges(gaps), Unpublished: len(in.Unpublished), UnpublishedRanges: firstRanges(in.Unpublished),
			Conflicts: s.repair.conflict.count(in.Name)}
		ss.Pacing, ss.Receivers = s.receiverStatuses(in)
		out = append(out, ss)
	}
	return out, total
}

// statusCore is Status without the sources: what a Probe answers, asked
// every second or so by other stores and tools, which with ten thousand
// sources must not read them all.
func (s *Store) statusCore() Status {
	st := Status{Name: s.cfg.Name, Group: s.cfg.Group, GroupID: s.repo.GroupID(), State: "starting", AppliedIndex: s.repo.AppliedIndex(), LastStop: s.lastStop}
	st.HasState, _ = s.hasLocalState()
	if r := s.raftNode(); r != nil {
		st.State = r.State().String()
		st.LastIndex = r.LastIndex()
		stats := r.Stats()
		st.SnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
		st.LastTerm, _ = strconv.ParseUint(stats["last_log_term"], 10, 64)
		if m, ok := s.leader(); ok {
			st.Leader = m.Name
		}
	} else if st.HasState {
		// Raft is not running yet (or any more), but the log on disk says
		// how far this store got. An empty member deciding whom it may vote
		// for reads this position: reporting 0 here let it take a stale
		// member for the most up-to-date one.
		st.LastIndex, st.LastTerm = s.diskPosition()
	}
	st.WaitingToJoin = s.waitingToJoin.Load()
	st.PreferredHost, st.PolicyDigest, st.Policy = s.cfg.PreferredHost, s.cfg.PolicyDigest, s.cfg.Policy
	if s.members != nil {
		st.Placement, st.PolicyMismatch = s.members.snapshot()
	}
	st.Repair = s.repair.Status()
	st.Version, st.FormatLevel, st.ActiveLevel, st.LevelHeldBy = version.String(), s.formatLevel(), s.activeLevel(), s.levels.held()
	st.Moved, st.MoveRefused = s.addressBook().moved(), s.moveRefusals.text()
	if peers, err := s.repo.PeerGroups(); err == nil && len(peers) > 0 {
		st.KnownGroups = peers
	}
	if shut, target := s.port.Gate().State(); shut {
		st.CatchingUp, st.CatchUpTarget, st.CatchUpBytes = true, target.Index, s.received.bytes()
	}
	if err := s.refusalErr(); err != nil {
		st.State = "refused"
		st.Error = err.Error()
	}
	if e := s.failed.Load(); e != nil {
		st.State = "failed"
		st.Error = (*e).Error()
	}
	return st
}

// diskPosition reads the last entry of the raft log on disk, or of the
// latest snapshot when that is further, as raft itself does at start.
func (s *Store) diskPosition() (index, term uint64) {
	if s.logStore != nil {
		if last, err := s.logStore.LastIndex(); err == nil && last > 0 {
			var l raft.Log
			if err := s.logStore.GetLog(last, &l); err == nil {
				index, term = l.Index, l.Term
			}
		}
	}
	if s.snaps != nil {
		if metas, err := s.snaps.List(); err == nil && len(metas) > 0 && metas[0].Index > index {
			index, term = metas[0].Index, metas[0].Term
		}
	}
	return index, term
}

// lostGaps returns in's gaps less what its publishers declared unused:
// the numbers this group misses that were published.
func lostGaps(in repository.SourceInfo) []repository.Range {
	if len(in.Unpublished) == 0 {
		return in.Gaps
	}
	var gaps, unused []seqRange
	for _, g := range in.Gaps {
		gaps = append(gaps, seqRange{g.From, g.To})
	}
	for _, g := range in.Unpublished {
		unused = append(unused, seqRange{g.From, g.To})
	}
	var out []repository.Range
	for _, r := range subtract(gaps, unused) {
		out = append(out, repository.Range{From: r.from, To: r.to})
	}
	return out
}

// firstRanges lists the first maxGapsShown of rs for a status.
func firstRanges(rs []repository.Range) [][2]uint64 {
	var out [][2]uint64
	for i, g := range rs {
		if i == maxGapsShown {
			break
		}
		out = append(out, [2]uint64{g.From, g.To})
	}
	return out
}
