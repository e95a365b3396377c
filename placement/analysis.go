package placement

import (
	"fmt"
	"strings"

	"umstore/quorum"
)

// Analysis is the failure analysis of a deployment: for each host that could
// be lost on its own, which groups keep a quorum and whether publishing goes
// on under each intergroup stability behaviour. It is meant for people
// ([Analysis.Render]) and for tools (it marshals to JSON with snake_case
// field names).
type Analysis struct {
	Deployment string `json:"deployment"`
	Hosts      int    `json:"hosts"`
	Groups     int    `json:"groups"`
	// Intergroup is the deployment's configured intergroup behaviour.
	Intergroup string `json:"intergroup"`
	// Intragroup is the deployment's intragroup behaviour when it is not
	// the default, quorum: then a group that keeps its quorum may still
	// confirm nothing (GroupOutcome.Confirms).
	Intragroup string `json:"intragroup,omitempty"`
	// HostLosses has one entry per host, in the deployment's host order.
	HostLosses []HostLoss `json:"host_losses"`
	// SurvivesAnyHostLoss is true when, under the configured intergroup
	// behaviour, publishing goes on whichever single host is lost.
	SurvivesAnyHostLoss bool `json:"survives_any_host_loss"`
	// Warnings are things an operator should know about the layout.
	Warnings []string `json:"warnings"`
}

// HostLoss is what happens when one host is lost and every other host keeps
// running.
type HostLoss struct {
	Host                string         `json:"host"`
	StoresLost          []string       `json:"stores_lost"`
	Groups              []GroupOutcome `json:"groups"`
	GroupsWithQuorum    []int          `json:"groups_with_quorum"`
	GroupsWithoutQuorum []int          `json:"groups_without_quorum"`
	// Publishing says, for each intergroup behaviour, whether publishing
	// goes on.
	Publishing Publishing `json:"publishing"`
	// PublishingGoesOn is Publishing under the configured behaviour.
	PublishingGoesOn bool `json:"publishing_goes_on"`
}

// GroupOutcome is the state of one group after a host is lost.
type GroupOutcome struct {
	Group      int  `json:"group"`
	Stores     int  `json:"stores"`      // stores in the group
	StoresLeft int  `json:"stores_left"` // stores on the hosts still up
	Quorum     int  `json:"quorum"`      // stores needed for a quorum
	HasQuorum  bool `json:"has_quorum"`
	// Confirms says, under an intragroup behaviour other than quorum
	// (Analysis.Intragroup), whether the group can still confirm new
	// messages ([quorum.Intragroup.Confirms]): under all only a group that
	// lost no store does. Nil under quorum, where it is HasQuorum.
	Confirms *bool `json:"confirms,omitempty"`
}

// confirms reports whether the group can confirm new messages.
func (g GroupOutcome) confirms() bool {
	if g.Confirms != nil {
		return *g.Confirms
	}
	return g.HasQuorum
}

// Publishing says whether publishing goes on under each intergroup
// stability behaviour: whether the groups that can still confirm new
// messages (those that keep a quorum, and under intragroup all only those
// that lost no store) meet the behaviour's rule ([quorum.Behavior.Met]),
// they being both the active groups and the ones that can hold a new
// message.
type Publishing struct {
	// Any: at least one group keeps a quorum.
	Any bool `json:"any"`
	// Majority: more than half of the groups keep a quorum.
	Majority bool `json:"majority"`
	// AllActive: at least one group keeps a quorum; the groups that lost
	// theirs become inactive and stop counting.
	AllActive bool `json:"all-active"`
	// All: every group keeps a quorum.
	All bool `json:"all"`
}

// Under reports the outcome for a behaviour by name ("any", "majority",
// "all-active", "all"); an unknown name reports false.
func (p Publishing) Under(behaviour string) bool {
	switch behaviour {
	case IntergroupAny:
		return p.Any
	case IntergroupMajority:
		return p.Majority
	case IntergroupAllActive:
		return p.AllActive
	case IntergroupAll:
		return p.All
	}
	return false
}

// Analyze works out, for each host of a valid deployment, what losing that
// host alone does: a group keeps its quorum when more than half of its stores
// run on other hosts. It also collects warnings, such as a host that holds a
// quorum of every group (losing it stops everything) or hosts that share an
// address (one machine failure takes them all).
func Analyze(d *Deployment) *Analysis {
	intergroup := d.Stability.WithDefaults().Intergroup
	intragroup, _ := quorum.ParseIntragroupBehavior(d.Stability.WithDefaults().Intragroup)
	a := &Analysis{
		Deployment:          d.Name,
		Hosts:               len(d.Hosts),
		Groups:              len(d.Groups),
		Intergroup:          intergroup,
		HostLosses:          []HostLoss{},
		SurvivesAnyHostLoss: true,
		Warnings:            []string{},
	}
	if intragroup != quorum.IntragroupQuorum {
		a.Intragroup = intragroup.String()
	}
	groups := d.sortedGroups()
	for _, h := range d.Hosts {
		loss := HostLoss{
			Host:                h.Name,
			StoresLost:          []string{},
			Groups:              []GroupOutcome{},
			GroupsWithQuorum:    []int{},
			GroupsWithoutQuorum: []int{},
		}
		for _, g := range groups {
			out := GroupOutcome{Group: g.Index, Stores: len(g.Stores), Quorum: len(g.Stores)/2 + 1}
			for _, s := range g.Stores {
				if s.Host == h.Name {
					loss.StoresLost = append(loss.StoresLost, s.Name)
				} else {
					out.StoresLeft++
				}
			}
			out.HasQuorum = out.StoresLeft >= out.Quorum
			if a.Intragroup != "" {
				ok := intragroup.Confirms(out.Stores, out.StoresLeft)
				out.Confirms = &ok
			}
			if out.HasQuorum {
				loss.GroupsWithQuorum = append(loss.GroupsWithQuorum, g.Index)
			} else {
				loss.GroupsWithoutQuorum = append(loss.GroupsWithoutQuorum, g.Index)
			}
			loss.Groups = append(loss.Groups, out)
		}
		loss.Publishing = publishing(confirmingGroups(loss), len(groups))
		loss.PublishingGoesOn = loss.Publishing.Under(intergroup)
		if !loss.PublishingGoesOn {
			a.SurvivesAnyHostLoss = false
		}
		a.HostLosses = append(a.HostLosses, loss)
	}
	a.Warnings = warnings(d, a)
	return a
}

// publishing applies the intergroup rule ([quorum.Behavior.Met]) to the loss
// of a host after which up of the total groups keep a quorum. Those groups
// are the active ones, and they are the ones that can commit a new message,
// so up is both the number active and the number holding it.
func publishing(up, total int) Publishing {
	goesOn := func(b quorum.Behavior) bool { return b.Met(up, total, up) }
	return Publishing{
		Any:       goesOn(quorum.Any),
		Majority:  goesOn(quorum.Majority),
		AllActive: goesOn(quorum.AllActive),
		All:       goesOn(quorum.All),
	}
}

func warnings(d *Deployment, a *Analysis) []string {
	w := []string{}
	for _, loss := range a.HostLosses {
		switch {
		case len(loss.StoresLost) == 0:
			w = append(w, fmt.Sprintf("host %s runs no stores", loss.Host))
		case len(loss.GroupsWithQuorum) == 0:
			w = append(w, fmt.Sprintf("every group keeps its quorum on host %s: losing host %s stops publishing under every intergroup behaviour", loss.Host, loss.Host))
		case !loss.PublishingGoesOn:
			var other []string
			for _, b := range IntergroupBehaviours {
				if b != a.Intergroup && loss.Publishing.Under(b) {
					other = append(other, fmt.Sprintf("%q", b))
				}
			}
			msg := fmt.Sprintf("with intergroup stability %q, losing host %s stops publishing (%d of %d groups keep a quorum)",
				a.Intergroup, loss.Host, len(loss.GroupsWithQuorum), a.Groups)
			if a.Intragroup != "" {
				msg = fmt.Sprintf("with intragroup stability %q and intergroup %q, losing host %s stops publishing (%d of %d groups can still confirm messages)",
					a.Intragroup, a.Intergroup, loss.Host, confirmingGroups(loss), a.Groups)
			}
			if len(other) > 0 {
				msg += "; " + strings.Join(other, " and ") + " would keep publishing"
			}
			w = append(w, msg)
		}
	}
	byAddr := map[string][]string{}
	var order []string
	for _, h := range d.Hosts {
		key, problem := checkAddress(h.Address)
		if problem != "" {
			key = h.Address
		}
		if _, seen := byAddr[key]; !seen {
			order = append(order, key)
		}
		byAddr[key] = append(byAddr[key], h.Name)
	}
	for _, addr := range order {
		if names := byAddr[addr]; len(names) > 1 {
			w = append(w, fmt.Sprintf("hosts %s share the address %s: they are one machine, whose failure takes all of them down; fine for development, not for production",
				strings.Join(names, " and "), addr))
		}
	}
	return w
}

// Render writes the analysis for people, one paragraph per host lost, then
// the verdict and any warnings.
func (a *Analysis) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Failure analysis of %q: %d hosts, %d groups, intergroup stability %q",
		a.Deployment, a.Hosts, a.Groups, a.Intergroup)
	if a.Intragroup != "" {
		fmt.Fprintf(&b, ", intragroup %q", a.Intragroup)
	}
	b.WriteString("\n")
	for _, loss := range a.HostLosses {
		b.WriteString("\n")
		if len(loss.StoresLost) == 0 {
			fmt.Fprintf(&b, "If host %s is lost: it runs no stores, nothing changes.\n", loss.Host)
			continue
		}
		fmt.Fprintf(&b, "If host %s is lost (%s stop):\n", loss.Host, strings.Join(loss.StoresLost, ", "))
		for _, g := range loss.Groups {
			state := "keeps its quorum"
			if !g.HasQuorum {
				state = fmt.Sprintf("loses its quorum (needs %d)", g.Quorum)
			}
			if g.HasQuorum && !g.confirms() {
				state += fmt.Sprintf(", but confirms nothing under intragroup %s (needs all %d)", a.Intragroup, g.Stores)
			}
			fmt.Fprintf(&b, "  group %d: %d of %d stores left, %s\n", g.Group, g.StoresLeft, g.Stores, state)
		}
		fmt.Fprintf(&b, "  publishing with %q: %s\n", a.Intergroup, goesOn(loss.PublishingGoesOn))
		var other []string
		for _, beh := range IntergroupBehaviours {
			if beh != a.Intergroup {
				other = append(other, fmt.Sprintf("%s %s", beh, goesOn(loss.Publishing.Under(beh))))
			}
		}
		fmt.Fprintf(&b, "  with the other behaviours: %s\n", strings.Join(other, ", "))
	}
	b.WriteString("\n")
	if a.SurvivesAnyHostLoss {
		fmt.Fprintf(&b, "Verdict: publishing goes on whichever single host is lost.\n")
	} else {
		fmt.Fprintf(&b, "Verdict: losing some single host stops publishing (see above).\n")
	}
	if len(a.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, w := range a.Warnings {
			fmt.Fprintf(&b, "  - %s\n", w)
		}
	}
	return b.String()
}

// confirmingGroups counts the groups of loss that can still confirm.
func confirmingGroups(loss HostLoss) int {
	n := 0
	for _, g := range loss.Groups {
		if g.confirms() {
			n++
		}
	}
	return n
}

func goesOn(ok bool) string {
	if ok {
		return "goes on"
	}
	return "stops"
}
