package placement

import (
	"cmp"
	"net"
	"path/filepath"
	"slices"
	"strconv"
)

// FileVersion is the only deployment file version this package reads and
// writes. A file with another version is refused rather than guessed at.
const FileVersion = 1

// Intragroup and intergroup stability behaviours, spelled as in the
// deployment file and as Ultra Messaging spells them.
const (
	// IntragroupQuorum: a message is stable in a group once the group's Raft
	// log has committed it: a majority of its stores hold it (default).
	IntragroupQuorum = "quorum"
	// IntragroupAllActive: stable in a group once every running store of
	// it holds it (at least a majority).
	IntragroupAllActive = "all-active"
	// IntragroupAll: stable in a group only once every store of it holds
	// it; a group with a store down confirms nothing.
	IntragroupAll = "all"

	// IntergroupAny: a message is stable once any one group has it (default).
	IntergroupAny = "any"
	// IntergroupMajority: stable once more than half of the groups have it.
	IntergroupMajority = "majority"
	// IntergroupAllActive: stable once every group that is active has it;
	// a group that lost its quorum stops counting.
	IntergroupAllActive = "all-active"
	// IntergroupAll: stable only once every configured group has it.
	IntergroupAll = "all"
)

// IntragroupBehaviours lists the accepted intragroup stability behaviours
// (UM's "all-stores" is accepted too, as "all").
var IntragroupBehaviours = []string{IntragroupQuorum, IntragroupAllActive, IntragroupAll}

// IntergroupBehaviours lists the accepted intergroup stability behaviours in
// the order they are shown to people.
var IntergroupBehaviours = []string{IntergroupAny, IntergroupMajority, IntergroupAllActive, IntergroupAll}

// Deployment is the content of a deployment file: which hosts exist, which
// store groups exist, where each store runs and on which ports, and how
// stability is decided. Every daemon and client of one deployment reads the
// same file, so it is the single source of truth about group membership.
//
// A Deployment returned by [Load], [Parse] or [Plan] has its defaults filled
// in and has been validated. One built in code should get
// [Deployment.FillDefaults] and be checked with [Deployment.Validate] before
// use.
type Deployment struct {
	Version   int       `yaml:"version" json:"version"`
	Name      string    `yaml:"name" json:"name"`
	Hosts     []Host    `yaml:"hosts" json:"hosts"`
	Groups    []Group   `yaml:"groups" json:"groups"`
	Stability Stability `yaml:"stability" json:"stability"`
	// Policy is how every store of the deployment behaves (retention,
	// timeouts, lock, snapshots, leader placement); see [Policy]. Keys left
	// out take the defaults of [DefaultPolicy].
	// The file shows it only when it is not wholly the default.
	Policy Policy `yaml:"policy,omitempty" json:"policy"`
	// Security, if present, turns on TLS for the client and raft ports
	// and/or a shared token clients must present. Absent: plain TCP, no
	// token (fine on loopback or a trusted network only).
	Security *Security `yaml:"security,omitempty" json:"security,omitempty"`

	// source names the file the deployment came from, for error messages.
	source string
	// lines maps key paths ("groups[0].stores[1].host") to the line they are
	// on in source, so that validation errors can point at the line.
	lines map[string]int
}

// Security names the files that secure a deployment. Relative paths are
// relative to the deployment file's directory.
type Security struct {
	TLS *TLS `yaml:"tls,omitempty" json:"tls,omitempty"`
	// TokenFile holds a shared secret every client presents in its
	// handshake; stores refuse a client without it.
	TokenFile string `yaml:"token-file,omitempty" json:"token-file,omitempty"`
	// MemberSecretFile holds the deployment's member secret (one line of
	// hex, written by `umstored plan`): every raft connection between two
	// stores proves that both ends hold it before raft reads a byte. Only
	// the hosts that run stores need the file; clients never read it, so
	// the deployment file itself can be handed to them.
	MemberSecretFile string `yaml:"member-secret-file,omitempty" json:"member-secret-file,omitempty"`
	// OperatorTokenFile holds the operators' secret: with it, a store
	// stops (`umstored stop`) only for a request that carries it, and the
	// client token no longer suffices. Without it, the client token stops
	// stores, and with no token at all only loopback may (docs/security.md).
	OperatorTokenFile string `yaml:"operator-token-file,omitempty" json:"operator-token-file,omitempty"`
	// Clients, if given, are the deployment's client identities: each
	// client is known by its own token or its TLS certificate's name and
	// may publish, receive and use receiver names only as its entry says
	// (docs/security.md, "Client identities"). TokenFile stays the
	// deployment's own token, for the stores' connections to one another
	// and the operators' tools, and may do everything. Absent: TokenFile
	// alone admits clients, to everything.
	Clients []Client `yaml:"clients,omitempty" json:"clients,omitempty"`
}

// Client is one client identity of the deployment: its name, how it is
// known (exactly one of TokenFile and TLSName), and the patterns of the
// names it may use (package clientperm's syntax: tokens between dots, *
// one token, a last > the rest).
type Client struct {
	Name string `yaml:"name" json:"name"`
	// TokenFile holds the token this client presents (its --token-file).
	TokenFile string `yaml:"token-file,omitempty" json:"token-file,omitempty"`
	// TLSName is the Subject CN or a DNS SAN of the client's certificate
	// (signed by security.tls.ca; needs security.tls.client-auth).
	TLSName string `yaml:"tls-name,omitempty" json:"tls-name,omitempty"`
	// Publish: the sources it may register and publish.
	Publish []string `yaml:"publish,omitempty" json:"publish,omitempty"`
	// Receive: the sources it may fetch, subscribe to and list.
	Receive []string `yaml:"receive,omitempty" json:"receive,omitempty"`
	// Receivers: the durable receiver names it may register and consume as.
	Receivers []string `yaml:"receivers,omitempty" json:"receivers,omitempty"`
}

// TLS names PEM files: the deployment's CA, and this host's certificate and
// key (valid for the host's address, for server and client use; stores
// also present it to their raft peers, which accept it only from that
// host's address).
type TLS struct {
	CA   string `yaml:"ca" json:"ca"`
	Cert string `yaml:"cert" json:"cert"`
	Key  string `yaml:"key" json:"key"`
	// ClientAuth makes the client ports require a certificate signed by CA
	// from publishers and receivers too (mutual TLS).
	ClientAuth bool `yaml:"client-auth,omitempty" json:"client-auth,omitempty"`
	// ClientCert and ClientKey name the certificate publishers, receivers
	// and operators' commands present when ClientAuth is on: a client
	// certificate of their own, signed by CA, never the stores' (a store's
	// key stays on the store hosts). Each client machine holds its own
	// files at these paths, or overrides them with --tls-cert/--tls-key.
	ClientCert string `yaml:"client-cert,omitempty" json:"client-cert,omitempty"`
	ClientKey  string `yaml:"client-key,omitempty" json:"client-key,omitempty"`
}

// File is the path of the file the deployment was read from ("" for one
// built in code), for messages that tell the operator which file to edit.
func (d *Deployment) File() string {
	if d.source == "deployment" {
		return ""
	}
	return d.source
}

// Resolve returns path as it is if absolute, else relative to the
// deployment file's directory.
func (d *Deployment) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) || d.source == "" || d.source == "deployment" {
		return path
	}
	return filepath.Join(filepath.Dir(d.source), path)
}

// Host is one machine (or, for development, one loopback address) that runs
// stores. Name is what operators type (`umstored run --host A`); Address is
// where the host's stores listen.
type Host struct {
	Name    string `yaml:"name" json:"name"`
	Address string `yaml:"address" json:"address"`
}

// Group is one store group: one Raft cluster. Index is the group number used
// in store names and on the wire, 1..number of groups.
type Group struct {
	Index int `yaml:"index" json:"index"`
	// PreferredHost names the host the group prefers to be led from: the
	// one holding a majority of its stores, so that losing the other host
	// never costs the group its leader (and the group that does lose its
	// leader had no quorum left anyway). The group's leader hands
	// leadership to a store there once it is up and caught up (see
	// [LeadershipPolicy]). Left out, it is the host holding the group's
	// majority, if one does ([Group.MajorityHost]); "none" turns the
	// preference off. It names a host, not an address, so it carries over
	// when a host is replaced at a new address.
	PreferredHost string  `yaml:"preferred-host,omitempty" json:"preferred-host,omitempty"`
	Stores        []Store `yaml:"stores" json:"stores"`
}

// NoPreferredHost, as a group's preferred-host, turns leader placement off
// for the group.
const NoPreferredHost = "none"

// MajorityHost returns the host that runs more than half of the group's
// stores, or "" if no host does.
func (g Group) MajorityHost() string {
	count := map[string]int{}
	for _, s := range g.Stores {
		count[s.Host]++
	}
	for _, s := range g.Stores {
		if 2*count[s.Host] > len(g.Stores) {
			return s.Host
		}
	}
	return ""
}

// Preferred returns the host the group's leadership should move to, or ""
// when it has none (preferred-host "none", or no host holds a majority and
// none was named).
func (g Group) Preferred() string {
	switch g.PreferredHost {
	case NoPreferredHost:
		return ""
	case "":
		return g.MajorityHost()
	}
	return g.PreferredHost
}

// Store is one member of a group. Its name is also the name of its data
// directory under the daemon's --data-dir. RaftPort carries the group's Raft
// traffic; ClientPort serves publishers and receivers.
type Store struct {
	Name       string `yaml:"name" json:"name"`
	Host       string `yaml:"host" json:"host"`
	RaftPort   int    `yaml:"raft-port" json:"raft-port"`
	ClientPort int    `yaml:"client-port" json:"client-port"`
}

// Stability says when a message counts as stable for its publisher: inside a
// group (Intragroup: "quorum", "all-active" or "all"; a publisher may ask
// for a stricter one for its source) and across groups (Intergroup: "any",
// "majority", "all-active" or "all"). Empty values mean the defaults,
// "quorum" and "any"; [Deployment.FillDefaults] fills them in, and [Parse]
// and [Plan] call it.
type Stability struct {
	Intragroup string `yaml:"intragroup" json:"intragroup"`
	Intergroup string `yaml:"intergroup" json:"intergroup"`
}

// StoreRef is a store together with its group index and the host it runs
// on, which is what a daemon or a client needs to reach it.
type StoreRef struct {
	Group int
	Store Store
	Host  Host
}

// RaftAddr is the "address:port" the store's Raft transport listens on.
// IPv6 addresses are bracketed.
func (r StoreRef) RaftAddr() string {
	return net.JoinHostPort(r.Host.Address, strconv.Itoa(r.Store.RaftPort))
}

// ClientAddr is the "address:port" publishers and receivers connect to.
// IPv6 addresses are bracketed.
func (r StoreRef) ClientAddr() string {
	return net.JoinHostPort(r.Host.Address, strconv.Itoa(r.Store.ClientPort))
}

// HostByName returns the host called name.
func (d *Deployment) HostByName(name string) (Host, bool) {
	for _, h := range d.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

// GroupByIndex returns the group whose index is i.
func (d *Deployment) GroupByIndex(i int) (Group, bool) {
	for _, g := range d.Groups {
		if g.Index == i {
			return g, true
		}
	}
	return Group{}, false
}

// sortedGroups returns the groups ordered by index, whatever their order in
// the file.
func (d *Deployment) sortedGroups() []Group {
	gs := slices.Clone(d.Groups)
	slices.SortStableFunc(gs, func(a, b Group) int { return cmp.Compare(a.Index, b.Index) })
	return gs
}

// Stores returns every store of the deployment, in group index order and
// then in the order the group lists them.
func (d *Deployment) Stores() []StoreRef {
	var out []StoreRef
	for _, g := range d.sortedGroups() {
		for _, s := range g.Stores {
			h, _ := d.HostByName(s.Host)
			out = append(out, StoreRef{Group: g.Index, Store: s, Host: h})
		}
	}
	return out
}

// StoresOn returns the stores that run on the named host, in group index
// order and then in the order the group lists them. It is what a host's
// daemon starts.
func (d *Deployment) StoresOn(host string) []StoreRef {
	var out []StoreRef
	for _, r := range d.Stores() {
		if r.Store.Host == host {
			out = append(out, r)
		}
	}
	return out
}

// Members returns the stores of group index, in the order the group lists
// them, or nil if there is no such group.
func (d *Deployment) Members(group int) []StoreRef {
	g, ok := d.GroupByIndex(group)
	if !ok {
		return nil
	}
	out := make([]StoreRef, 0, len(g.Stores))
	for _, s := range g.Stores {
		h, _ := d.HostByName(s.Host)
		out = append(out, StoreRef{Group: g.Index, Store: s, Host: h})
	}
	return out
}

// StoreByName returns the store called name.
func (d *Deployment) StoreByName(name string) (StoreRef, bool) {
	for _, r := range d.Stores() {
		if r.Store.Name == name {
			return r, true
		}
	}
	return StoreRef{}, false
}
