package placement

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Changing a running deployment. A host replaced by a server at another
// address keeps its name and its stores (names, groups, ports): only its
// address changes, and the running stores learn the new addresses from
// the replaced host's stores (storegroup, "Where the members listen now").
// Readdress plans that change; adding or removing a host or a group is a
// change of the groups' raft membership and of the layout that no command
// makes yet.

// ErrNotReaddress is wrapped by the refusals of Readdress: what was asked
// is not a change of existing hosts' addresses.
var ErrNotReaddress = errors.New("not a change of host addresses")

// Change is one difference between two deployments, for the operator.
type Change struct {
	// What changed: "host" (its address) or "store" (its raft and client
	// addresses, which follow its host's).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Group is the store's group; 0 for a host.
	Group int    `json:"group,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// String is "host A: 10.0.0.1 -> 10.0.0.4" or "store G1S1 (group 1):
// raft 10.0.0.1:14011, client 10.0.0.1:15011 -> raft 10.0.0.4:14011,
// client 10.0.0.4:15011".
func (c Change) String() string {
	if c.Kind == "store" {
		return fmt.Sprintf("store %s (group %d): %s -> %s", c.Name, c.Group, c.From, c.To)
	}
	return fmt.Sprintf("%s %s: %s -> %s", c.Kind, c.Name, c.From, c.To)
}

// Readdress returns d with the hosts named in addrs (host name -> new
// address) at their new addresses, and what changes. It refuses a name
// that is no host of d (adding a host is another change), an address
// another host keeps, and a request that changes nothing.
func Readdress(d *Deployment, addrs map[string]string) (*Deployment, []Change, error) {
	if len(addrs) == 0 {
		return nil, nil, fmt.Errorf("%w: give the new address of a host with --host NAME=ADDRESS", ErrNotReaddress)
	}
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	sort.Strings(names)
	nd := *d
	nd.Hosts = slices.Clone(d.Hosts)
	var changes []Change
	for _, name := range names {
		i := slices.IndexFunc(nd.Hosts, func(h Host) bool { return h.Name == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: %q is no host of the deployment %q (its hosts: %s); adding or removing a host is not supported yet: plan a new deployment (docs/operations.md, \"Replacing a host\")", ErrNotReaddress, name, d.Name, strings.Join(hostNamesOf(d), ", "))
		}
		addr := strings.TrimSpace(addrs[name])
		if addr == "" {
			return nil, nil, fmt.Errorf("%w: host %s: the new address is empty", ErrNotReaddress, name)
		}
		if nd.Hosts[i].Address == addr {
			continue
		}
		changes = append(changes, Change{Kind: "host", Name: name, From: nd.Hosts[i].Address, To: addr})
		nd.Hosts[i].Address = addr
	}
	if len(changes) == 0 {
		return nil, nil, fmt.Errorf("%w: every host named already has that address; nothing changes", ErrNotReaddress)
	}
	for i, h := range nd.Hosts {
		for _, o := range nd.Hosts[i+1:] {
			if h.Address == o.Address {
				return nil, nil, fmt.Errorf("%w: hosts %s and %s would both be at %s", ErrNotReaddress, h.Name, o.Name, h.Address)
			}
		}
	}
	if err := nd.Validate(); err != nil {
		return nil, nil, err
	}
	old := map[string]StoreRef{}
	for _, ref := range d.Stores() {
		old[ref.Store.Name] = ref
	}
	for _, ref := range nd.Stores() {
		o := old[ref.Store.Name]
		if o.RaftAddr() != ref.RaftAddr() || o.ClientAddr() != ref.ClientAddr() {
			changes = append(changes, Change{Kind: "store", Name: ref.Store.Name, Group: ref.Group,
				From: "raft " + o.RaftAddr() + ", client " + o.ClientAddr(), To: "raft " + ref.RaftAddr() + ", client " + ref.ClientAddr()})
		}
	}
	return &nd, changes, nil
}

func hostNamesOf(d *Deployment) []string {
	out := make([]string, len(d.Hosts))
	for i, h := range d.Hosts {
		out[i] = h.Name
	}
	return out
}

// WithHostAddresses returns the deployment file data with the hosts named
// in addrs at their new addresses, the rest of the file (comments, key
// order, style) left as it was. The result is parsed and validated before
// it is returned; source names the file in errors.
func WithHostAddresses(data []byte, source string, addrs map[string]string) ([]byte, error) {
	if source == "" {
		source = "deployment"
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, decodeError(source, err, nil)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a deployment file (a YAML mapping with version, hosts and groups); write one with `umstored plan`", source)
	}
	hosts := mappingValue(root.Content[0], "hosts")
	if hosts == nil || hosts.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: the deployment has no hosts list", source)
	}
	done := map[string]bool{}
	for _, h := range hosts.Content {
		if h.Kind != yaml.MappingNode {
			continue
		}
		name := mappingValue(h, "name")
		if name == nil {
			continue
		}
		addr, ok := addrs[name.Value]
		if !ok {
			continue
		}
		v := mappingValue(h, "address")
		if v == nil {
			return nil, fmt.Errorf("%s:%d: host %s has no address", source, h.Line, name.Value)
		}
		*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: addr, Style: v.Style, LineComment: v.LineComment}
		done[name.Value] = true
	}
	for name := range addrs {
		if !done[name] {
			return nil, fmt.Errorf("%s: %w: %q is no host of the file", source, ErrNotReaddress, name)
		}
	}
	return encodeEdited(&root, source)
}
