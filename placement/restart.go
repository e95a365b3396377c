package placement

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoStoreWithState means that every member of a group is empty, so there
// is nothing for an empty store to catch up from. Starting the group anyway
// would create a quorum of empty stores and lose what the group held; the
// operator decides what to do with `umstored recover`.
//
// It is the one definition of the concept: RestartPlan returns it when it
// plans a host's restart, and a running store (package storegroup) refuses
// with it when its group's identity is remembered elsewhere, so errors.Is
// matches either.
var ErrNoStoreWithState = errors.New("no store with state")

// What a store must reach before the stores that wait for it may start.
const (
	// ReadyRunning: the store is up and has rejoined its group (stores that
	// kept their state).
	ReadyRunning = "running"
	// ReadyCaughtUp: the store has caught up with its group: it has a
	// repository for every source the group knows, with its retained
	// messages (stores that started empty).
	ReadyCaughtUp = "caught-up"
)

// Restart is the staged restart of the stores of one host. Stores that kept
// their state start first, all at once. Empty stores follow, at most one per
// group catching up at a time, and each only once its group has a running
// member with state, so that no group ever has a quorum of empty stores.
type Restart struct {
	Host  string `json:"host"`
	Steps []Step `json:"steps"`
}

// Step starts one store. Steps are ordered; steps with the same Number may
// start together. A daemon may start a step as soon as its WaitsFor store has
// reached WaitsUntil (steps of different groups do not wait for each other),
// or simply run the steps number by number.
type Step struct {
	Number   int    `json:"step"`
	Store    string `json:"store"`
	Group    int    `json:"group"`
	HasState bool   `json:"has_state"`
	// WaitsFor names a store of this host that must reach WaitsUntil
	// ("running" or "caught-up") before this store starts; "" means the
	// store may start at once.
	WaitsFor   string `json:"waits_for,omitempty"`
	WaitsUntil string `json:"waits_until,omitempty"`
	// ReadyWhen is what this store must reach before stores waiting for
	// it start: "running" if it kept its state, "caught-up" if it is empty.
	ReadyWhen string `json:"ready_when"`
	// CatchesUpFrom lists the members with state an empty store copies
	// from, as "G1S3 (host B)".
	CatchesUpFrom []string `json:"catches_up_from,omitempty"`
	// Note says the same in a sentence for people.
	Note string `json:"note"`
}

// RestartPlan orders the start of the stores of host.
//
// hasState tells, by store name, whether a store kept its state. A store of
// host that is missing from the map is treated as empty. A store of another
// host that is missing is assumed to be running with its state (the plan is
// for one host coming back while the others run); mark it false to say it is
// empty or down.
//
// If a group that has empty stores on host has no member with state
// anywhere, RestartPlan returns an error wrapping [ErrNoStoreWithState] that
// reads "cannot recover group N: no store with state" (one per such group,
// joined). A brand-new deployment, where every store is empty and no group
// was ever started, is bootstrapped rather than restarted, and is not
// planned here.
func RestartPlan(d *Deployment, host string, hasState map[string]bool) (*Restart, error) {
	if _, ok := d.HostByName(host); !ok {
		var names []string
		for _, h := range d.Hosts {
			names = append(names, h.Name)
		}
		return nil, fmt.Errorf("restart plan: unknown host %q (the deployment's hosts are %s)", host, strings.Join(names, ", "))
	}
	for name := range hasState {
		if _, ok := d.StoreByName(name); !ok {
			return nil, fmt.Errorf("restart plan: unknown store %q; the deployment has no store of that name", name)
		}
	}
	withState := func(r StoreRef) bool {
		v, listed := hasState[r.Store.Name]
		if r.Store.Host == host {
			return v
		}
		return !listed || v
	}

	local := d.StoresOn(host)
	var groups []int
	for _, r := range local {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}

	// Refuse first if some group cannot be recovered at all.
	var errs []error
	for _, g := range groups {
		members := d.Members(g)
		if slices.ContainsFunc(members, withState) {
			continue
		}
		errs = append(errs, fmt.Errorf("cannot recover group %d: %w: every member is empty (%s), so nothing can be restored from the group itself. Use `umstored recover` to restore a numbered backup, or to accept the loss explicitly",
			g, ErrNoStoreWithState, byHost(members)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	plan := &Restart{Host: host, Steps: []Step{}}
	first := 1
	for _, r := range local {
		if withState(r) {
			first = 2
			plan.Steps = append(plan.Steps, Step{
				Number: 1, Store: r.Store.Name, Group: r.Group, HasState: true, ReadyWhen: ReadyRunning,
				Note: fmt.Sprintf("start %s (kept its state); it rejoins group %d", r.Store.Name, r.Group),
			})
		}
	}
	for _, g := range groups {
		var localState, remoteState, sources []string
		var stateful []StoreRef
		for _, m := range d.Members(g) {
			if !withState(m) {
				continue
			}
			stateful = append(stateful, m)
			sources = append(sources, fmt.Sprintf("%s (host %s)", m.Store.Name, m.Store.Host))
			if m.Store.Host == host {
				localState = append(localState, m.Store.Name)
			} else {
				remoteState = append(remoteState, m.Store.Name)
			}
		}
		prev, k := "", 0
		for _, r := range local {
			if r.Group != g || withState(r) {
				continue
			}
			name := r.Store.Name
			st := Step{
				Number: first + k, Store: name, Group: g, ReadyWhen: ReadyCaughtUp,
				CatchesUpFrom: sources,
			}
			switch {
			case prev != "":
				st.WaitsFor, st.WaitsUntil = prev, ReadyCaughtUp
				st.Note = fmt.Sprintf("start %s (empty): %s waits until %s has caught up", name, name, prev)
			case len(remoteState) == 0:
				st.WaitsFor, st.WaitsUntil = localState[0], ReadyRunning
				st.Note = fmt.Sprintf("start %s (empty): %s waits until %s is running, then catches up from %s",
					name, name, localState[0], byHost(stateful))
			default:
				st.Note = fmt.Sprintf("start %s (empty): it catches up from %s; wait until it has caught up",
					name, byHost(stateful))
			}
			plan.Steps = append(plan.Steps, st)
			prev, k = name, k+1
		}
	}
	// Steps by number; within a number, group order then store order.
	slices.SortStableFunc(plan.Steps, func(a, b Step) int { return cmp.Compare(a.Number, b.Number) })
	return plan, nil
}

// Phases groups the steps by number: the stores of one phase may start
// together once the stores of the previous phase are ready.
func (r *Restart) Phases() [][]Step {
	var out [][]Step
	for _, s := range r.Steps {
		if len(out) == 0 || out[len(out)-1][0].Number != s.Number {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], s)
	}
	return out
}

// Render writes the plan for people, one line per store.
func (r *Restart) Render() string {
	var b strings.Builder
	empty := 0
	for _, s := range r.Steps {
		if !s.HasState {
			empty++
		}
	}
	fmt.Fprintf(&b, "Restart plan for host %s: %d stores, %d with state, %d empty\n",
		r.Host, len(r.Steps), len(r.Steps)-empty, empty)
	if len(r.Steps) == 0 {
		b.WriteString("  nothing to start: the host runs no stores\n")
		return b.String()
	}
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "  step %d: %s\n", s.Number, s.Note)
	}
	if empty == 0 {
		b.WriteString("Every store kept its state, so all start at once.\n")
	} else {
		b.WriteString("At most one empty store per group catches up at a time, so no group has a quorum of empty stores.\n")
	}
	return b.String()
}

// byHost lists stores grouped by host: "G1S1, G1S2 on host A; G1S3 on host B".
func byHost(stores []StoreRef) string {
	var parts []string
	for i := 0; i < len(stores); {
		j := i
		var names []string
		for ; j < len(stores) && stores[j].Store.Host == stores[i].Store.Host; j++ {
			names = append(names, stores[j].Store.Name)
		}
		parts = append(parts, strings.Join(names, ", ")+" on host "+stores[i].Store.Host)
		i = j
	}
	return strings.Join(parts, "; ")
}
