package placement

import (
	"fmt"
	"slices"
	"strings"
)

// Defaults for a [Request] field left at zero.
const (
	DefaultName           = "umstore"
	DefaultGroups         = 2
	DefaultStoresPerGroup = 3
	DefaultBasePort       = 14000
)

// Limits of the port numbering (see [Plan]): store numbers are one digit and
// group numbers two.
const (
	MaxStoresPerGroup = 9
	MaxGroups         = 99
)

// Request is what the operator asks the planner for. Zero values mean the
// defaults above; Hosts has no default.
type Request struct {
	Name           string // deployment name; default "umstore"
	Hosts          []Host // the hosts to spread stores over, in the order given
	Groups         int    // number of store groups; default 2
	StoresPerGroup int    // stores in each group, odd and at least 3; default 3
	BasePort       int    // start of the port numbering; default 14000
}

func (r Request) withDefaults() Request {
	if r.Name == "" {
		r.Name = DefaultName
	}
	if r.Groups == 0 {
		r.Groups = DefaultGroups
	}
	if r.StoresPerGroup == 0 {
		r.StoresPerGroup = DefaultStoresPerGroup
	}
	if r.BasePort == 0 {
		r.BasePort = DefaultBasePort
	}
	r.Hosts = slices.Clone(r.Hosts)
	return r
}

// Plan lays the stores of a deployment out over the requested hosts and
// analyses what losing each host would do. It refuses, with a [*Refusal],
// any request it considers unsafe: fewer than 3 or an even number of stores
// per group, fewer than 2 hosts, ports that do not fit, and any layout where
// losing some single host leaves no group with a quorum (such as two hosts
// and one group). The deployment it returns has its defaults filled in and
// has been validated.
//
// Layout: each group's stores are spread over the hosts as evenly as
// possible. When the stores do not divide evenly, the hosts that get one
// store more rotate from group to group, so that different hosts hold the
// majority of different groups. With two hosts and two groups of three this
// gives the 2+1 / 1+2 layout (A: G1S1 G1S2 G2S1; B: G1S3 G2S2 G2S3); with
// three or more hosts no host holds a majority of any group, so every group
// survives the loss of any one host.
//
// Stores are named G<group>S<n>, and numbered ports are
// raft-port = BasePort + 10*group + n and
// client-port = BasePort + 1000 + 10*group + n,
// so the default base 14000 gives G1S1 the ports 14011 and 15011.
func Plan(req Request) (*Deployment, *Analysis, error) {
	req = req.withDefaults()
	if r := req.check(); r != nil {
		return nil, nil, r
	}
	d := layout(req.Name, req.Hosts, req.Groups, req.StoresPerGroup, req.BasePort)
	if err := d.Validate(); err != nil {
		// check() accepted the request, so this is a planner bug.
		return nil, nil, fmt.Errorf("placement: planned an invalid deployment (a bug, please report it): %w", err)
	}
	a := Analyze(d)
	if r := noSurvivor(d, a); r != nil {
		return nil, nil, r
	}
	return d, a, nil
}

// check refuses malformed or unsafe requests before any layout is made.
func (r Request) check() *Refusal {
	seen := map[string]bool{}
	for i, h := range r.Hosts {
		if msg := checkName(h.Name); msg != "" {
			return refuse(ErrInvalidRequest, "invalid-host",
				fmt.Sprintf("host %d: name %s", i+1, msg),
				"Give each host as NAME=ADDRESS, for example --host A=10.0.0.1.")
		}
		if seen[h.Name] {
			return refuse(ErrInvalidRequest, "duplicate-host",
				fmt.Sprintf("host %q is given twice", h.Name),
				"Each host needs its own name; two hosts may share an address only for testing on one machine.")
		}
		seen[h.Name] = true
		if _, msg := checkAddress(h.Address); msg != "" {
			return refuse(ErrInvalidRequest, "invalid-address",
				fmt.Sprintf("host %q: address %s", h.Name, msg),
				"Give each host as NAME=ADDRESS, for example --host A=10.0.0.1.")
		}
	}
	switch {
	case r.Groups < 0:
		return refuse(ErrInvalidRequest, "invalid-groups",
			fmt.Sprintf("%d groups", r.Groups), "Ask for at least one group; two is the usual choice for two hosts.")
	case r.StoresPerGroup < 0:
		return refuse(ErrInvalidRequest, "invalid-stores-per-group",
			fmt.Sprintf("%d stores per group", r.StoresPerGroup), "Ask for an odd number of at least 3 stores per group.")
	case r.BasePort < 0:
		return refuse(ErrInvalidRequest, "invalid-base-port",
			fmt.Sprintf("base port %d", r.BasePort), "Give a base port such as 14000; the ports used are listed in `umstored plan --help`.")
	case r.StoresPerGroup < 3:
		return refuse(ErrTooFewStores, "too-few-stores",
			fmt.Sprintf("%s per group; a group needs at least 3", plural(r.StoresPerGroup, "store")),
			WhyOddAtLeastThree+"\n\nAsk for 3 stores per group (--stores-per-group 3). With two hosts, two groups of 3 laid out 2+1 / 1+2 keep publishing when either host is lost.")
	case r.StoresPerGroup%2 == 0:
		return refuse(ErrEvenGroupSize, "even-group-size",
			fmt.Sprintf("%d stores per group is an even number", r.StoresPerGroup),
			WhyOddAtLeastThree+fmt.Sprintf("\n\nAsk for %d or %d stores per group.", r.StoresPerGroup-1, r.StoresPerGroup+1))
	case r.StoresPerGroup > MaxStoresPerGroup:
		return refuse(ErrInvalidRequest, "too-many-stores",
			fmt.Sprintf("%d stores per group; at most %d", r.StoresPerGroup, MaxStoresPerGroup),
			"Every store of a group takes part in each commit, so large groups are slow; 3 or 5 stores per group is the usual choice, and the port numbering gives each store one digit.")
	case r.Groups > MaxGroups:
		return refuse(ErrInvalidRequest, "too-many-groups",
			fmt.Sprintf("%d groups; at most %d", r.Groups, MaxGroups),
			"A publisher sends every message to every group, so each group adds traffic; two groups are enough to survive the loss of one of two hosts.")
	case len(r.Hosts) == 0:
		return refuse(ErrTooFewHosts, "no-hosts", "no hosts given",
			"Name the hosts that will run stores, for example --host A=10.0.0.1 --host B=10.0.0.2.")
	case len(r.Hosts) == 1:
		return refuse(ErrTooFewHosts, "too-few-hosts",
			fmt.Sprintf("only one host (%s); losing it would lose every store", r.Hosts[0].Name),
			"Every group needs a quorum that survives the loss of a host, and with one host there is none: when it fails, no group can accept or serve messages, and if it comes back without its state every group is empty.\n\nGive at least two hosts. With two hosts, two groups of 3 stores are laid out 2+1 / 1+2 so that either host can be lost. For development on one machine, give two host names with the same address (or use `umstored dev`).")
	}
	maxRaft := r.BasePort + 10*r.Groups + r.StoresPerGroup
	maxClient := maxRaft + 1000
	if maxClient > 65535 {
		return refuse(ErrPortRange, "port-range",
			fmt.Sprintf("base port %d gives ports up to %d, beyond 65535", r.BasePort, maxClient),
			fmt.Sprintf("Raft ports run from base+11 to base+%d and client ports from base+1011 to base+%d. Choose a base port of at most %d.",
				10*r.Groups+r.StoresPerGroup, 1000+10*r.Groups+r.StoresPerGroup, 65535-1000-10*r.Groups-r.StoresPerGroup))
	}
	return nil
}

// layout spreads groups*perGroup stores over the hosts; see [Plan].
func layout(name string, hosts []Host, groups, perGroup, basePort int) *Deployment {
	d := &Deployment{
		Version: FileVersion,
		Name:    name,
		Hosts:   slices.Clone(hosts),
	}
	n := len(hosts)
	each, extra := perGroup/n, perGroup%n
	for g := 1; g <= groups; g++ {
		counts := make([]int, n)
		for h := range counts {
			counts[h] = each
		}
		first := (g - 1) * extra % n
		for k := range extra {
			counts[(first+k)%n]++
		}
		grp := Group{Index: g}
		s := 1
		for h, c := range counts {
			for range c {
				grp.Stores = append(grp.Stores, Store{
					Name:       fmt.Sprintf("G%dS%d", g, s),
					Host:       hosts[h].Name,
					RaftPort:   basePort + 10*g + s,
					ClientPort: basePort + 1000 + 10*g + s,
				})
				s++
			}
		}
		d.Groups = append(d.Groups, grp)
	}
	for i := range d.Groups {
		// Written out, so that the operator sees (and may change) where
		// each group prefers to be led from.
		d.Groups[i].PreferredHost = d.Groups[i].MajorityHost()
	}
	d.FillDefaults()
	return d
}

// noSurvivor refuses a layout in which losing some host leaves no group
// with a quorum.
func noSurvivor(d *Deployment, a *Analysis) *Refusal {
	var lines []string
	var bad []string
	for _, loss := range a.HostLosses {
		if len(loss.GroupsWithQuorum) > 0 {
			continue
		}
		bad = append(bad, loss.Host)
		var held []string
		for _, g := range loss.Groups {
			held = append(held, fmt.Sprintf("%d of the %d stores of group %d", g.Stores-g.StoresLeft, g.Stores, g.Group))
		}
		lines = append(lines, fmt.Sprintf("Host %s runs %s: a quorum of every group, so losing host %s stops publishing and leaves no group to recover from.", loss.Host, strings.Join(held, ", "), loss.Host))
	}
	if len(bad) == 0 {
		return nil
	}
	advice := "Add groups, so that different hosts hold the majority of different groups, or add hosts, so that no host holds a majority of any group."
	if len(d.Hosts) == 2 && len(d.Groups) == 1 {
		advice = "With two hosts, every group has a majority of its stores on one of them. Ask for two groups (--groups 2): they are laid out 2+1 / 1+2, so whichever host is lost, the other still holds a quorum of one group. Or add a third host."
	}
	return refuse(ErrNoSurvivingGroup, "no-surviving-group",
		fmt.Sprintf("losing host %s leaves no group with a quorum", strings.Join(bad, " or ")),
		strings.Join(lines, "\n")+"\n\n"+advice)
}

// plural writes "1 store" or "2 stores".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
