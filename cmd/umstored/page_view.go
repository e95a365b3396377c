package main

import (
	"fmt"
	"slices"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// deploymentView is what /v1/deployment returns: the deployment's layout,
// its failure analysis, and every store's state as this daemon sees it now
// (its own stores from their status, the others' by probing them).
type deploymentView struct {
	Deployment string `json:"deployment"`
	Time       string `json:"time"`
	// ServedBy names the hosts whose stores run in this daemon.
	ServedBy   []string            `json:"served_by"`
	Intergroup string              `json:"intergroup"`
	Publishing bool                `json:"publishing"`
	Reason     string              `json:"reason"`
	Hosts      []hostView          `json:"hosts"`
	Groups     []groupView         `json:"groups"`
	Stores     []storeView         `json:"stores"`
	Analysis   *placement.Analysis `json:"analysis"`
}

// hostView is one host of the deployment.
type hostView struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// Local is true when this daemon runs the host's stores.
	Local bool `json:"local"`
	// State is "up" when every store of the host answers, "down" when none
	// does, "degraded" otherwise.
	State  string   `json:"state"`
	Stores []string `json:"stores"`
}

// groupView is one store group.
type groupView struct {
	Index  int      `json:"index"`
	Leader string   `json:"leader"` // empty: no store reports leading the group
	Stores []string `json:"stores"`
	// Running counts the stores that run raft (leader, follower, candidate,
	// catching up); Quorum is how many the group needs.
	Running int `json:"running"`
	Quorum  int `json:"quorum"`
	// Sources are what the group holds, as store SourcesFrom holds them
	// (the leader if it answered, else a member run by this daemon).
	Sources     []sourceView `json:"sources"`
	SourcesFrom string       `json:"sources_from,omitempty"`
	// Repair is the intergroup repair's progress, known when this daemon
	// runs the group's leader.
	Repair *storegroup.RepairStatus `json:"repair,omitempty"`
}

// sourceView is what a group holds of one source.
type sourceView struct {
	Name    string `json:"name"`
	HighSeq uint64 `json:"high_seq"`
	LowSeq  uint64 `json:"oldest_seq"`
	Count   uint64 `json:"count"`
	Gaps    int    `json:"gaps"`
}

// storeView is one store of the deployment.
type storeView struct {
	Name    string `json:"name"`
	Group   int    `json:"group"`
	Host    string `json:"host"`
	Address string `json:"address"`
	// Local is true when this daemon runs the store.
	Local bool `json:"local"`
	// State is what the page shows: leader, up, candidate, catching-up,
	// waiting, empty, starting, failed, stopped or down (did not answer).
	State string `json:"state"`
	// RaftState is the store's own word: Leader, Follower, Candidate,
	// Shutdown, starting or failed; empty when it did not answer.
	RaftState     string `json:"raft_state"`
	Leader        string `json:"leader"` // the leader as this store knows it
	AppliedIndex  uint64 `json:"applied_index"`
	LastIndex     uint64 `json:"last_index"`
	GroupID       string `json:"group_id"`
	HasState      bool   `json:"has_state"`
	CatchingUp    bool   `json:"catching_up"`
	WaitingToJoin bool   `json:"waiting_to_join"`
	Error         string `json:"error,omitempty"`
}

// runningStates are the page states of a store that takes part in raft.
var runningStates = []string{"leader", "up", "candidate", "catching-up"}

// buildView assembles the view from the local stores' statuses and a round
// of probes of the others. d must be valid; local holds the statuses of the
// stores this daemon runs, on hosts localHosts.
func buildView(d *placement.Deployment, analysis *placement.Analysis, localHosts []string, local []storegroup.Status, remote remoteRound, now time.Time) deploymentView {
	v := deploymentView{
		Deployment: d.Name,
		Time:       now.UTC().Format(time.RFC3339),
		ServedBy:   slices.Clone(localHosts),
		Intergroup: d.Stability.Intergroup,
		Hosts:      []hostView{},
		Groups:     []groupView{},
		Stores:     []storeView{},
		Analysis:   analysis,
	}
	if v.Intergroup == "" {
		v.Intergroup = placement.IntergroupAny
	}
	byName := map[string]storegroup.Status{}
	for _, st := range local {
		byName[st.Name] = st
	}
	nameByAddr := map[string]string{}
	for _, ref := range d.Stores() {
		nameByAddr[ref.ClientAddr()] = ref.Store.Name
	}
	index := map[string]int{} // store name -> position in v.Stores
	for _, ref := range d.Stores() {
		sv := storeView{Name: ref.Store.Name, Group: ref.Group, Host: ref.Host.Name, Address: ref.ClientAddr()}
		if st, ok := byName[ref.Store.Name]; ok {
			sv.Local = true
			fromStatus(&sv, st)
		} else {
			fromProbe(&sv, remote.stores[ref.Store.Name], nameByAddr)
		}
		index[sv.Name] = len(v.Stores)
		v.Stores = append(v.Stores, sv)
	}

	withLeader := 0
	for _, g := range d.Groups {
		gv := groupView{Index: g.Index, Stores: []string{}, Sources: []sourceView{}, Quorum: len(g.Stores)/2 + 1}
		var leader *storeView
		for _, s := range g.Stores {
			gv.Stores = append(gv.Stores, s.Name)
			sv := &v.Stores[index[s.Name]]
			if sv.State == "leader" && (leader == nil || sv.LastIndex > leader.LastIndex) {
				leader = sv
			}
		}
		if leader != nil {
			gv.Leader = leader.Name
			withLeader++
			// A follower far behind the leader is still catching up.
			for _, s := range g.Stores {
				sv := &v.Stores[index[s.Name]]
				if sv.State == "up" && sv.AppliedIndex+catchingUpLag < leader.AppliedIndex {
					sv.State = "catching-up"
				}
			}
		}
		for _, s := range g.Stores {
			if slices.Contains(runningStates, v.Stores[index[s.Name]].State) {
				gv.Running++
			}
		}
		groupSources(&gv, leader, byName, remote)
		v.Groups = append(v.Groups, gv)
	}
	slices.SortFunc(v.Groups, func(a, b groupView) int { return a.Index - b.Index })

	for _, h := range d.Hosts {
		hv := hostView{Name: h.Name, Address: h.Address, Local: slices.Contains(localHosts, h.Name), Stores: []string{}}
		answered := 0
		for _, ref := range d.StoresOn(h.Name) {
			hv.Stores = append(hv.Stores, ref.Store.Name)
			if v.Stores[index[ref.Store.Name]].State != "down" {
				answered++
			}
		}
		switch {
		case answered == len(hv.Stores):
			hv.State = "up"
		case answered == 0:
			hv.State = "down"
		default:
			hv.State = "degraded"
		}
		v.Hosts = append(v.Hosts, hv)
	}

	v.Publishing = publishingPossible(v.Intergroup, withLeader, len(d.Groups))
	v.Reason = fmt.Sprintf("%d of %d groups have a leader; intergroup %s needs %s",
		withLeader, len(d.Groups), v.Intergroup, needText(v.Intergroup, len(d.Groups)))
	return v
}

// fromStatus fills a store run by this daemon from its status.
func fromStatus(sv *storeView, st storegroup.Status) {
	sv.RaftState, sv.Leader = st.State, st.Leader
	sv.AppliedIndex, sv.LastIndex, sv.GroupID = st.AppliedIndex, st.LastIndex, st.GroupID
	sv.HasState, sv.CatchingUp, sv.WaitingToJoin = st.HasState, st.CatchingUp, st.WaitingToJoin
	sv.Error = st.Error
	sv.State = pageState(st.State, st.HasState, st.CatchingUp, st.WaitingToJoin)
}

// fromProbe fills a store run elsewhere from its answer to a probe; a store
// that did not answer is down.
func fromProbe(sv *storeView, res probeResult, nameByAddr map[string]string) {
	rep := res.reply
	if rep == nil {
		sv.State = "down"
		sv.Error = "did not answer"
		if res.err != nil {
			sv.Error = res.err.Error()
		}
		return
	}
	sv.RaftState = rep.State
	sv.Leader = nameByAddr[rep.Leader]
	if sv.Leader == "" {
		sv.Leader = rep.Leader
	}
	sv.AppliedIndex, sv.LastIndex, sv.GroupID = rep.AppliedIndex, rep.LastIndex, rep.GroupID
	sv.HasState, sv.CatchingUp = rep.HasState, rep.CatchingUp
	sv.State = pageState(rep.State, rep.HasState, rep.CatchingUp, false)
}

// pageState turns what a store says about itself into the state the page
// shows. The order matters: a failed store may have had state, a leader
// never catches up, an empty store waiting for its turn is waiting.
func pageState(raftState string, hasState, catchingUp, waiting bool) string {
	switch {
	case raftState == "failed":
		return "failed"
	case raftState == "Leader":
		return "leader"
	case catchingUp:
		return "catching-up"
	case waiting:
		return "waiting"
	case !hasState:
		return "empty"
	case raftState == "starting":
		return "starting"
	case raftState == "Shutdown":
		return "stopped"
	case raftState == "Candidate":
		return "candidate"
	}
	return "up"
}

// groupSources picks where the group's sources come from: the leader when
// this daemon runs it (with the repair's progress), else the remote
// leader's answer, else a member with state run by this daemon.
func groupSources(gv *groupView, leader *storeView, local map[string]storegroup.Status, remote remoteRound) {
	use := func(from string, list []storegroup.SourceStatus) {
		gv.SourcesFrom = from
		for _, s := range list {
			gv.Sources = append(gv.Sources, sourceView{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Gaps: s.Gaps})
		}
	}
	if leader != nil && leader.Local {
		st := local[leader.Name]
		use(st.Name, st.Sources)
		repair := st.Repair
		gv.Repair = &repair
		return
	}
	if rs, ok := remote.sources[gv.Index]; ok {
		gv.SourcesFrom = rs.from
		for _, s := range rs.sources {
			gv.Sources = append(gv.Sources, sourceView{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Gaps: len(s.Gaps)})
		}
		return
	}
	for _, name := range gv.Stores {
		if st, ok := local[name]; ok && st.HasState && st.State != "failed" {
			use(name, st.Sources)
			return
		}
	}
}

// publishingPossible says whether publishing goes on when withLeader of n
// groups have a leader, under an intergroup behaviour.
func publishingPossible(intergroup string, withLeader, n int) bool {
	switch intergroup {
	case placement.IntergroupAll:
		return withLeader == n
	case placement.IntergroupMajority:
		return 2*withLeader > n
	}
	return withLeader >= 1
}
