package deploystatus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"umstore/placement"
	"umstore/quorum"
	"umstore/storegroup"
	"umstore/wire"
)

// View is a deployment's status as one observer sees it now: its own
// stores from their status, the others' from their answers to probes. It is
// what a daemon's /v1/deployment returns (with the deployment's failure
// analysis), and what [Summary] condenses for `umstored status`.
type View struct {
	Deployment string `json:"deployment"`
	Time       string `json:"time"`
	// ServedBy names the hosts whose stores run in the observing daemon.
	ServedBy   []string `json:"served_by"`
	Intergroup string   `json:"intergroup"`
	// Intragroup is the deployment's intragroup behaviour when it is not
	// quorum: a group with a leader then confirms messages only with the
	// stores it names running (Group.Confirms).
	Intragroup string              `json:"intragroup,omitempty"`
	Publishing bool                `json:"publishing"`
	Reason     string              `json:"reason"`
	Hosts      []Host              `json:"hosts"`
	Groups     []Group             `json:"groups"`
	Stores     []Store             `json:"stores"`
	Analysis   *placement.Analysis `json:"analysis"`
	// PolicyDigest is the digest of the deployment file's policy;
	// PolicyMismatch lists the stores that run another (a flag of their
	// daemon overrides it, or their host has another file), each as
	// "STORE: key: theirs vs the file's; ...".
	PolicyDigest   string   `json:"policy_digest"`
	PolicyMismatch []string `json:"policy_mismatch,omitempty"`
}

// Host is one host of the deployment.
type Host struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// Local is true when the observing daemon runs the host's stores.
	Local bool `json:"local"`
	// State is "up" when every store of the host answers, "down" when none
	// does, "degraded" otherwise.
	State  string   `json:"state"`
	Stores []string `json:"stores"`
}

// Group is one store group.
type Group struct {
	Index  int      `json:"index"`
	Leader string   `json:"leader"` // empty: no store reports leading the group
	Stores []string `json:"stores"`
	// Running counts the stores that run raft (leader, up, candidate,
	// catching up); Quorum is how many the group needs.
	Running int `json:"running"`
	Quorum  int `json:"quorum"`
	// Confirms says, under an intragroup behaviour other than quorum,
	// whether the group can confirm new messages now: it has a leader and,
	// under all, every store runs. Nil under quorum, where a leader is
	// enough.
	Confirms *bool `json:"confirms,omitempty"`
	// Sources are what the group holds, as store SourcesFrom holds them
	// (the leader if it answered, else a member run by the observer);
	// SourcesFrom is empty when no store told.
	Sources     []Source `json:"sources"`
	SourcesFrom string   `json:"sources_from,omitempty"`
	// SourcesTotal, when more than len(Sources), is how many sources the
	// group holds: a store's status lists a bounded number of them.
	SourcesTotal int `json:"sources_total,omitempty"`
	// Repair is the intergroup repair's progress, known when the observer
	// runs the group's leader.
	Repair *storegroup.RepairStatus `json:"repair,omitempty"`
	// PreferredHost is where the group prefers to be led from ("" for no
	// preference), LeaderHost where its leader runs, and Placement what
	// that means: led from the preferred host, or waiting to move there.
	PreferredHost string `json:"preferred_host,omitempty"`
	LeaderHost    string `json:"leader_host,omitempty"`
	Placement     string `json:"placement,omitempty"`
	// ActiveLevel is the group's active format level: its leader's word,
	// else the highest a store of it applied (0: none said). LevelHeldBy,
	// from a leader the observer runs, the members that keep it below
	// the leader's binary's.
	ActiveLevel int      `json:"active_level,omitempty"`
	LevelHeldBy []string `json:"level_held_by,omitempty"`
}

// Source is what a group holds of one source.
type Source struct {
	Name    string `json:"name"`
	HighSeq uint64 `json:"high_seq"`
	LowSeq  uint64 `json:"oldest_seq"`
	Count   uint64 `json:"count"`
	Gaps    int    `json:"gaps"`
	// Conflicts counts the sequence numbers another group holds with
	// another payload, as the group's leader found (a consistency
	// violation; receivers get the lowest group's payload).
	Conflicts uint64 `json:"conflicts,omitempty"`
	// Pacing is the source's receiver-paced persistence (blocking,
	// non-blocking), empty when it has none; Receivers its named receivers
	// (receivers.go). Both are empty when the store that told is older than
	// durable receivers.
	Pacing    string     `json:"pacing,omitempty"`
	Receivers []Receiver `json:"receivers,omitempty"`
}

// Store is one store of the deployment.
type Store struct {
	Name    string `json:"name"`
	Group   int    `json:"group"`
	Host    string `json:"host"`
	Address string `json:"address"`
	// MovedFrom is the deployment file's address of a store that answered
	// elsewhere, where its group says it moved (a replaced host): Address
	// is then where it answered (moved.go).
	MovedFrom string `json:"moved_from,omitempty"`
	// Local is true when the observer runs the store.
	Local bool `json:"local"`
	// State is one of the State constants (see the package documentation).
	State string `json:"state"`
	// RaftState is the store's own word: Leader, Follower, Candidate,
	// Shutdown, starting, failed or refused; empty when it did not answer.
	RaftState     string `json:"raft_state"`
	Leader        string `json:"leader"` // the leader as this store knows it
	AppliedIndex  uint64 `json:"applied_index"`
	LastIndex     uint64 `json:"last_index"`
	GroupID       string `json:"group_id"`
	HasState      bool   `json:"has_state"`
	CatchingUp    bool   `json:"catching_up"`
	WaitingToJoin bool   `json:"waiting_to_join"`
	// LastStop says how the store stopped before its current run: clean,
	// dirty (a crash or kill: raft replayed its log) or new; empty when
	// it did not say.
	LastStop string `json:"last_stop,omitempty"`
	// CatchUpTarget and CatchUpBytes are a catching-up store's progress:
	// the index it catches up to (AppliedIndex is how far it got) and the
	// bytes received from its group so far.
	CatchUpTarget uint64 `json:"catch_up_target,omitempty"`
	CatchUpBytes  uint64 `json:"catch_up_bytes,omitempty"`
	Error         string `json:"error,omitempty"`
	// PolicyDigest is the digest of the policy the store runs, when it
	// said (a store that does not know Ping does not).
	PolicyDigest string `json:"policy_digest,omitempty"`
	// Version is the build of the store's binary, empty from a store
	// older than the field; FormatLevel the format level it reads (1 for
	// such a store), ActiveLevel its group's level as it applied it (0:
	// it did not say). See docs/operations.md, "Upgrading".
	Version     string   `json:"version,omitempty"`
	FormatLevel int      `json:"format_level,omitempty"`
	ActiveLevel int      `json:"active_level,omitempty"`
	policy      string   // the policy, for the mismatch's details
	placement   string   // a local leader's own word on placement
	levelHeldBy []string // a local leader's members that hold its group's level back
}

// Build assembles the view of d from the statuses of the stores the
// observer runs (local, on hosts localHosts) and a round of probes of the
// others (remote). d must be valid; analysis is passed through.
func Build(d *placement.Deployment, analysis *placement.Analysis, localHosts []string, local []storegroup.Status, remote Round, now time.Time) View {
	behaviour, name := intergroup(d)
	intra, _ := quorum.ParseIntragroupBehavior(d.Stability.WithDefaults().Intragroup)
	v := View{
		Deployment:   d.Name,
		Time:         now.UTC().Format(time.RFC3339),
		ServedBy:     slices.Clone(localHosts),
		Intergroup:   name,
		Hosts:        []Host{},
		Groups:       []Group{},
		Stores:       []Store{},
		Analysis:     analysis,
		PolicyDigest: d.Policy.WithDefaults().Digest(),
	}
	if intra != quorum.IntragroupQuorum {
		v.Intragroup = intra.String()
	}
	byName := map[string]storegroup.Status{}
	for _, st := range local {
		byName[st.Name] = st
	}
	index := v.addStores(d, byName, remote)

	withLeader, confirming := 0, 0
	for _, g := range d.Groups {
		gv, leader := v.group(g, index, intra)
		if leader != nil {
			withLeader++
		}
		if leader != nil && (gv.Confirms == nil || *gv.Confirms) {
			confirming++
		}
		groupSources(&gv, leader, byName, remote)
		groupPlacement(&gv, g, leader)
		v.Groups = append(v.Groups, gv)
	}
	slices.SortFunc(v.Groups, func(a, b Group) int { return a.Index - b.Index })

	for _, h := range d.Hosts {
		v.Hosts = append(v.Hosts, v.host(d, h, localHosts, index))
	}
	v.policyMismatches(d)
	v.publishing(d, behaviour, intra, withLeader, confirming)
	return v
}

// addStores adds every store of d to the view, in the deployment's order:
// a store the observer runs from its status (byName), any other from the
// probe round. It returns each store's position in v.Stores by name.
func (v *View) addStores(d *placement.Deployment, byName map[string]storegroup.Status, remote Round) map[string]int {
	nameByAddr := map[string]string{}
	for _, ref := range d.Stores() {
		nameByAddr[ref.ClientAddr()] = ref.Store.Name
	}
	movedNames(nameByAddr, remote)
	index := map[string]int{} // store name -> position in v.Stores
	for _, ref := range d.Stores() {
		sv := Store{Name: ref.Store.Name, Group: ref.Group, Host: ref.Host.Name, Address: ref.ClientAddr()}
		if st, ok := byName[ref.Store.Name]; ok {
			sv.Local = true
			fromStatus(&sv, st)
		} else {
			fromProbe(&sv, remote.Stores[ref.Store.Name], nameByAddr)
		}
		index[sv.Name] = len(v.Stores)
		v.Stores = append(v.Stores, sv)
	}
	return index
}

// group makes the view of group g from its stores' (index locates them in
// v.Stores): its leader, the leading store with the longest log, which it
// returns, nil when none leads; the members that lag the leader by more
// than catchingUpLag, marked catching up; how many run; and, with an
// intragroup stability other than quorum, whether it can confirm.
func (v *View) group(g placement.Group, index map[string]int, intra quorum.Intragroup) (Group, *Store) {
	gv := Group{Index: g.Index, Stores: []string{}, Sources: []Source{}, Quorum: len(g.Stores)/2 + 1}
	var leader *Store
	for _, s := range g.Stores {
		gv.Stores = append(gv.Stores, s.Name)
		sv := &v.Stores[index[s.Name]]
		if sv.State == StateLeader && (leader == nil || sv.LastIndex > leader.LastIndex) {
			leader = sv
		}
	}
	for _, s := range g.Stores {
		gv.ActiveLevel = max(gv.ActiveLevel, v.Stores[index[s.Name]].ActiveLevel)
	}
	if leader != nil && leader.ActiveLevel > 0 {
		gv.ActiveLevel, gv.LevelHeldBy = leader.ActiveLevel, leader.levelHeldBy
	}
	if len(gv.LevelHeldBy) == 0 {
		gv.LevelHeldBy = heldBack(g, index, v.Stores, gv.ActiveLevel)
	}
	if leader != nil {
		gv.Leader = leader.Name
		for _, s := range g.Stores {
			sv := &v.Stores[index[s.Name]]
			if sv.State == StateUp && sv.AppliedIndex+catchingUpLag < leader.AppliedIndex {
				sv.State = StateCatchingUp
			}
		}
	}
	for _, s := range g.Stores {
		if slices.Contains(runningStates, v.Stores[index[s.Name]].State) {
			gv.Running++
		}
	}
	if v.Intragroup != "" {
		ok := leader != nil && intra.Confirms(len(g.Stores), gv.Running)
		gv.Confirms = &ok
	}
	return gv, leader
}

// host makes the view of host h: up when every store on it answered, down
// when none did, degraded in between.
func (v *View) host(d *placement.Deployment, h placement.Host, localHosts []string, index map[string]int) Host {
	hv := Host{Name: h.Name, Address: h.Address, Local: slices.Contains(localHosts, h.Name), Stores: []string{}}
	answered := 0
	for _, ref := range d.StoresOn(h.Name) {
		hv.Stores = append(hv.Stores, ref.Store.Name)
		if v.Stores[index[ref.Store.Name]].State != StateDown {
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
	return hv
}

// policyMismatches lists the stores that run with a policy other than
// d's, and how it differs.
func (v *View) policyMismatches(d *placement.Deployment) {
	file := d.Policy.Canonical()
	for _, sv := range v.Stores {
		if sv.PolicyDigest != "" && sv.PolicyDigest != v.PolicyDigest {
			diff := strings.Join(placement.PolicyDiff(sv.policy, file), "; ")
			if diff == "" {
				diff = "policy " + sv.PolicyDigest
			}
			v.PolicyMismatch = append(v.PolicyMismatch, sv.Name+": "+diff)
		}
	}
}

// publishing says whether publishing is possible, with withLeader groups
// led and confirming of them able to confirm, and why.
func (v *View) publishing(d *placement.Deployment, behaviour quorum.Behavior, intra quorum.Intragroup, withLeader, confirming int) {
	name := v.Intergroup
	n := len(d.Groups)
	v.Publishing = publishingPossible(name, confirming, n)
	v.Reason = fmt.Sprintf("%d of %d groups have a leader; intergroup %s needs %s", withLeader, n, name, behaviour.NeededText(n))
	if v.Intragroup != "" {
		stores := 0
		if len(d.Groups) > 0 {
			stores = len(d.Groups[0].Stores)
		}
		v.Reason = fmt.Sprintf("%d of %d groups have a leader, %d can confirm (intragroup %s needs %s of a group's stores); intergroup %s needs %s",
			withLeader, n, confirming, intra, intra.NeededText(stores), name, behaviour.NeededText(n))
	}
}

// groupPlacement says where the group prefers to be led from and whether
// its leader is there: a leader run by the observer says it itself (with
// what it waits for), another is judged by its host.
func groupPlacement(gv *Group, g placement.Group, leader *Store) {
	gv.PreferredHost = g.Preferred()
	if leader == nil {
		return
	}
	gv.LeaderHost = leader.Host
	switch {
	case leader.placement != "":
		gv.Placement = leader.placement
	case gv.PreferredHost == "":
	case leader.Host == gv.PreferredHost:
		gv.Placement = "led from its preferred host " + gv.PreferredHost
	default:
		gv.Placement = fmt.Sprintf("led from host %s; moves to its preferred host %s once a store there is up and caught up", leader.Host, gv.PreferredHost)
	}
}

// intergroup is the deployment's intergroup behaviour and its name; an
// unset one is "any", the default.
func intergroup(d *placement.Deployment) (quorum.Behavior, string) {
	if d.Stability.Intergroup == "" {
		return quorum.Any, quorum.Any.String()
	}
	b, err := quorum.ParseBehavior(d.Stability.Intergroup)
	if err != nil {
		// A validated deployment names a known behaviour; report an unknown
		// one under its own name, judged as the default.
		return quorum.Any, d.Stability.Intergroup
	}
	return b, d.Stability.Intergroup
}

// publishingPossible says whether publishing goes on when withLeader of n
// groups have a leader, under the intergroup behaviour named intergroup:
// the groups with a leader are the active ones, and each of them can hold a
// new message. An unknown name is judged as the default, any.
func publishingPossible(intergroup string, withLeader, n int) bool {
	b, err := quorum.ParseBehavior(intergroup)
	if err != nil {
		b = quorum.Any
	}
	return b.Met(withLeader, n, withLeader)
}

// fromStatus fills a store run by the observer from its status.
func fromStatus(sv *Store, st storegroup.Status) {
	sv.RaftState, sv.Leader = st.State, st.Leader
	sv.AppliedIndex, sv.LastIndex, sv.GroupID = st.AppliedIndex, st.LastIndex, st.GroupID
	sv.HasState, sv.CatchingUp, sv.WaitingToJoin = st.HasState, st.CatchingUp, st.WaitingToJoin
	sv.LastStop, sv.CatchUpTarget, sv.CatchUpBytes = st.LastStop, st.CatchUpTarget, st.CatchUpBytes
	sv.Error = st.Error
	sv.State = classify(st.State, st.HasState, st.CatchingUp, st.WaitingToJoin)
	sv.PolicyDigest, sv.policy, sv.placement = st.PolicyDigest, st.Policy, st.Placement
	sv.Version, sv.FormatLevel, sv.ActiveLevel, sv.levelHeldBy = st.Version, st.FormatLevel, st.ActiveLevel, st.LevelHeldBy
}

// fromProbe fills a store run elsewhere from its answer to a probe; a store
// that did not answer is down.
func fromProbe(sv *Store, res ProbeResult, nameByAddr map[string]string) {
	rep := res.Reply
	if rep == nil {
		sv.State = StateDown
		sv.Error = "did not answer"
		if res.Err != nil {
			sv.Error = res.Err.Error()
		}
		return
	}
	if res.At != "" {
		sv.MovedFrom, sv.Address = sv.Address, res.At
	}
	sv.RaftState = rep.State
	sv.Leader = nameByAddr[rep.Leader]
	if sv.Leader == "" {
		sv.Leader = rep.Leader
	}
	sv.AppliedIndex, sv.LastIndex, sv.GroupID = rep.AppliedIndex, rep.LastIndex, rep.GroupID
	sv.HasState, sv.CatchingUp = rep.HasState, rep.CatchingUp
	sv.LastStop, sv.CatchUpTarget, sv.CatchUpBytes = rep.LastStop, rep.CatchUpTarget, rep.CatchUpBytes
	sv.State = classify(rep.State, rep.HasState, rep.CatchingUp, false)
	sv.FormatLevel = 1 // a store older than levels reads level 1
	if res.Pong != nil {
		sv.PolicyDigest, sv.policy = res.Pong.PolicyDigest, res.Pong.Policy
		sv.Version, sv.ActiveLevel = res.Pong.Version, int(res.Pong.ActiveLevel)
		sv.FormatLevel = max(int(res.Pong.FormatLevel), 1)
	}
}

// groupSources picks where the group's sources come from: the leader when
// the observer runs it (with the repair's progress), else the remote
// leader's answer, else a member with state run by the observer.
func groupSources(gv *Group, leader *Store, local map[string]storegroup.Status, remote Round) {
	use := func(from string, list []storegroup.SourceStatus, total int) {
		gv.SourcesFrom = from
		if total > len(list) {
			gv.SourcesTotal = total
		}
		for _, s := range list {
			gv.Sources = append(gv.Sources, Source{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Gaps: s.Gaps, Conflicts: s.Conflicts,
				Pacing: s.Pacing, Receivers: statusReceivers(s.Receivers)})
		}
	}
	if leader != nil && leader.Local {
		st := local[leader.Name]
		use(st.Name, st.Sources, st.SourcesTotal)
		repair := st.Repair
		gv.Repair = &repair
		return
	}
	if rs, ok := remote.Sources[gv.Index]; ok {
		gv.SourcesFrom = rs.From
		gv.Sources = append(gv.Sources, wireSources(rs.Sources, rs.Receivers)...)
		return
	}
	for _, name := range gv.Stores {
		if st, ok := local[name]; ok && st.HasState && st.State != "failed" {
			use(name, st.Sources, st.SourcesTotal)
			return
		}
	}
}

// wireSources converts a leader's answers: its sources, and its receivers
// (nil from a store that does not report them).
func wireSources(list []wire.SourceState, receivers []wire.SourceReceivers) []Source {
	out := make([]Source, len(list))
	for i, s := range list {
		out[i] = Source{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Gaps: lostGaps(s), Conflicts: s.Conflicts}
		for _, sr := range receivers {
			if sr.Source == s.Name {
				out[i].Pacing, out[i].Receivers = sr.Pacing, wireReceivers(sr)
			}
		}
	}
	return out
}

// lostGaps counts s's gaps that are not wholly in a range its publisher
// declared unused (wire.SourceState.Unpublished): those were never
// published, not lost.
func lostGaps(s wire.SourceState) int {
	n := 0
	for _, g := range s.Gaps {
		covered := g.From
		for _, u := range s.Unpublished {
			if u.From <= covered && u.To >= covered {
				covered = u.To + 1
			}
		}
		if covered <= g.To {
			n++
		}
	}
	return n
}

// heldBack lists, for a group at level active, the stores whose binary
// reads a lower level than the group's newest: what keeps the leader from
// raising it, as an observer that runs no leader sees it.
func heldBack(g placement.Group, index map[string]int, stores []Store, active int) []string {
	newest := 0
	for _, s := range g.Stores {
		newest = max(newest, stores[index[s.Name]].FormatLevel)
	}
	if active == 0 || active >= newest {
		return nil
	}
	var out []string
	for _, s := range g.Stores {
		sv := stores[index[s.Name]]
		switch {
		case sv.FormatLevel == 0:
			out = append(out, sv.Name+": not answering")
		case sv.FormatLevel < newest:
			out = append(out, fmt.Sprintf("%s: reads level %d", sv.Name, sv.FormatLevel))
		}
	}
	return out
}
