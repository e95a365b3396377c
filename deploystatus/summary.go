package deploystatus

import (
	"time"

	"umstore/placement"
	"umstore/wire"
)

// Summary is the condensed view `umstored status --json` prints: per group,
// its leader, each store's state and what the leader holds; and whether
// publishing is possible. Its JSON names are relied on by scripts and
// tests: keep them.
type Summary struct {
	Deployment string         `json:"deployment"`
	Intergroup string         `json:"intergroup"`
	Intragroup string         `json:"intragroup,omitempty"` // set when not quorum (View.Intragroup)
	Groups     []SummaryGroup `json:"groups"`
	Publishing bool           `json:"publishing"`
	Reason     string         `json:"reason"`
	// PolicyDigest is the deployment file's policy digest; PolicyMismatch
	// the stores that run another policy, and how it differs.
	PolicyDigest   string   `json:"policy_digest,omitempty"`
	PolicyMismatch []string `json:"policy_mismatch,omitempty"`
}

// SummaryGroup is one group of a Summary.
type SummaryGroup struct {
	Index  int    `json:"index"`
	Leader string `json:"leader"`
	// PreferredHost, LeaderHost and Placement: where the group prefers to
	// be led from, where its leader runs, and what that means.
	PreferredHost string         `json:"preferred_host,omitempty"`
	LeaderHost    string         `json:"leader_host,omitempty"`
	Placement     string         `json:"placement,omitempty"`
	Stores        []SummaryStore `json:"stores"`
	// Sources are as the leader holds them; null when no leader told.
	// SourcesTotal, when more, is how many it holds (a store's status
	// lists a bounded number).
	Sources      []Source `json:"sources"`
	SourcesTotal int      `json:"sources_total,omitempty"`
	// Confirms is Group.Confirms: set under an intragroup behaviour other
	// than quorum.
	Confirms *bool `json:"confirms,omitempty"`
	// ActiveLevel and LevelHeldBy: as in Group.
	ActiveLevel int      `json:"active_level,omitempty"`
	LevelHeldBy []string `json:"level_held_by,omitempty"`
}

// SummaryStore is one store of a Summary.
type SummaryStore struct {
	Name         string `json:"name"`
	Host         string `json:"host"`
	Address      string `json:"address"`
	MovedFrom    string `json:"moved_from,omitempty"` // the file's address of a store found where its group says it moved
	State        string `json:"state"`
	AppliedIndex uint64 `json:"applied_index"`
	GroupID      string `json:"group_id,omitempty"`
	Error        string `json:"error,omitempty"`
	// LastStop, CatchingUp, CatchUpTarget, CatchUpBytes: as in Store.
	LastStop      string `json:"last_stop,omitempty"`
	CatchingUp    bool   `json:"catching_up,omitempty"`
	CatchUpTarget uint64 `json:"catch_up_target,omitempty"`
	CatchUpBytes  uint64 `json:"catch_up_bytes,omitempty"`
	// Version, FormatLevel, ActiveLevel: as in Store.
	Version     string `json:"version,omitempty"`
	FormatLevel int    `json:"format_level,omitempty"`
	ActiveLevel int    `json:"active_level,omitempty"`
}

// Summary condenses the view: groups in index order, each group's stores
// in the deployment's order.
func (v View) Summary() Summary {
	s := Summary{Deployment: v.Deployment, Intergroup: v.Intergroup, Intragroup: v.Intragroup, Publishing: v.Publishing, Reason: v.Reason,
		PolicyDigest: v.PolicyDigest, PolicyMismatch: v.PolicyMismatch}
	byName := map[string]Store{}
	for _, st := range v.Stores {
		byName[st.Name] = st
	}
	for _, g := range v.Groups {
		sg := SummaryGroup{Index: g.Index, Leader: g.Leader, PreferredHost: g.PreferredHost, LeaderHost: g.LeaderHost, Placement: g.Placement,
			Stores: make([]SummaryStore, 0, len(g.Stores)), Confirms: g.Confirms, ActiveLevel: g.ActiveLevel, LevelHeldBy: g.LevelHeldBy}
		for _, name := range g.Stores {
			st := byName[name]
			sg.Stores = append(sg.Stores, SummaryStore{Name: st.Name, Host: st.Host, Address: st.Address, MovedFrom: st.MovedFrom, State: st.State,
				AppliedIndex: st.AppliedIndex, GroupID: st.GroupID, Error: st.Error,
				LastStop: st.LastStop, CatchingUp: st.CatchingUp, CatchUpTarget: st.CatchUpTarget, CatchUpBytes: st.CatchUpBytes,
				Version: st.Version, FormatLevel: st.FormatLevel, ActiveLevel: st.ActiveLevel})
		}
		if g.SourcesFrom != "" {
			sg.Sources, sg.SourcesTotal = append([]Source{}, g.Sources...), g.SourcesTotal
		}
		s.Groups = append(s.Groups, sg)
	}
	return s
}

// StoreWithState returns a store of group that answered with state or with
// the group's identity, if there is one: such a group recovers by itself.
func (v View) StoreWithState(group int) (Store, bool) {
	for _, st := range v.Stores {
		if st.Group == group && st.State != StateDown && (st.HasState || st.GroupID != "") {
			return st, true
		}
	}
	return Store{}, false
}

// Probe asks every store of d for its state, once, through dialer, and
// builds the view of an observer that runs none of them: what
// `umstored status`, `umstored stop` and `umstored recover` act on.
func Probe(d *placement.Deployment, dialer *wire.Dialer, limits Limits) View {
	limits.Reuse = 0
	r := NewProber(d.Stores(), dialer, limits).Round()
	return Build(d, nil, nil, nil, r, time.Now())
}
