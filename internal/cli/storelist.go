package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"umstore/placement"
)

// UM store lists. A UM source names its stores one option at a time:
//
//	ume_store       [DomainID:]IP:port[:RegID[:GroupIDX]]   (--store)
//	ume_store_name  name[:RegID[:GroupIDX]]                 (--store-name)
//	ume_store_group GroupIDX:GroupSZ                        (--store-group)
//
// Each occurrence appends; "0.0.0.0:0" clears the stores given so far and
// "0:0" the groups. GroupIDX labels a group as UM numbers them, from 0 (an
// omitted GroupIDX is 0): stores with the same GroupIDX form one group, and
// groups are taken in increasing GroupIDX order, so labels need not be
// consecutive. umstore's groups are replicated (a group's stores are one
// raft cluster, which holds one registration per source), so a publisher
// has one registration for its source everywhere: every store of a list
// carries the same RegID, 0 for "let the publisher pick a new one".

// Limits of UM store lists.
const (
	// MaxGroupIndex is the largest GroupIDX accepted: any small integer
	// labels a group.
	MaxGroupIndex = 255
	// MaxStoreNameLen is the longest store name in --store-name (UM's
	// context-name limit).
	MaxStoreNameLen = 128
)

// StoreFlags are the UM-style store list flags of the client commands.
type StoreFlags struct {
	Stores []string // --store, UM ume_store
	Names  []string // --store-name, UM ume_store_name
	Groups []string // --store-group, UM ume_store_group
}

// AddStoreFlags declares --store, --store-name and --store-group on fs.
func AddStoreFlags(fs *pflag.FlagSet) *StoreFlags {
	f := &StoreFlags{}
	fs.StringArrayVar(&f.Stores, "store", nil, "a store as UM's ume_store; `SPEC` is [DomainID:]IP:port[:RegID[:GroupIDX]] (repeat for every store; instead of --deployment; 0.0.0.0:0 clears the list)")
	fs.StringArrayVar(&f.Names, "store-name", nil, "a store of the deployment by name, as UM's ume_store_name; `SPEC` is NAME[:RegID[:GroupIDX]] (repeat; needs --deployment, whose other stores are then not used)")
	fs.StringArrayVar(&f.Groups, "store-group", nil, "a group's size, as UM's ume_store_group; `SPEC` is GroupIDX:GroupSZ (repeat in increasing GroupIDX order; checked against the stores given; 0:0 clears)")
	return f
}

// StoreList is where a client's stores are: what the publisher and
// receiver SDKs are given, plus what the list said about registration.
type StoreList struct {
	// Groups lists, per group in increasing GroupIDX order (or the
	// deployment's group order), the client addresses of its stores.
	Groups [][]string
	// Indexes is each group's GroupIDX from the store list, or its index
	// in the deployment when the stores came from the deployment alone.
	Indexes []int
	// RegID is the static RegID the list gave every store, 0 if none or
	// if it gave each store its own.
	RegID uint32
	// RegIDs is, when the list gave the stores different RegIDs (UM gives
	// each store its own), the RegID of each store, per group as in
	// Groups (publisher.Config.StoreRegIDs); nil otherwise.
	RegIDs [][]uint32
	// Domains is the DomainID each --store entry gave, by client address,
	// for the entries that gave one other than 0. UM names the UM domain
	// (a routing domain of its DRO) a store is in; umstore has no routing
	// domains, and reaches every store at its address directly: the
	// DomainID is recorded and shown (LogDomains), never routed on.
	Domains map[string]uint32
}

// LogDomains tells, at info, each store the list gave a DomainID, and
// what that means here.
func (l StoreList) LogDomains(log *slog.Logger) {
	for _, g := range l.Groups {
		for _, addr := range g {
			if d, ok := l.Domains[addr]; ok {
				log.Info("store list: DomainID recorded, not routed (umstore has no UM routing domains: the store is reached at its address directly)", "store", addr, "domain_id", d)
			}
		}
	}
}

// storeEntry is one store of a UM store list.
type storeEntry struct {
	spec   string // as given, for messages
	flag   string // "--store" or "--store-name"
	addr   string
	domain uint32 // UM DomainID, 0 if none given
	regID  uint32
	index  int
	group  int // the deployment group of a named store; 0 for --store
}

// Stores works out the stores a client uses: the deployment's groups, or a
// UM store list (--store without a deployment; --store-name with one),
// checked against --store-group.
func Stores(deploymentPath string, f StoreFlags) (StoreList, *placement.Deployment, error) {
	var d *placement.Deployment
	switch {
	case deploymentPath != "" && len(f.Stores) > 0:
		return StoreList{}, nil, errors.New("give either --deployment or --store, not both (--store-name picks stores of a deployment by name)")
	case len(f.Names) > 0 && deploymentPath == "":
		return StoreList{}, nil, errors.New("--store-name needs --deployment: store names are resolved through the deployment file")
	case deploymentPath == "" && len(f.Stores) == 0:
		return StoreList{}, nil, errors.New("say where the stores are: --deployment FILE (written by `umstored plan` or `umstored dev`) or --store IP:port[:RegID[:GroupIDX]]")
	}
	if deploymentPath != "" {
		var err error
		if d, err = placement.Load(deploymentPath); err != nil {
			return StoreList{}, nil, err
		}
		if len(f.Names) == 0 {
			if len(f.Groups) > 0 {
				return StoreList{}, nil, errors.New("--store-group checks a store list: give the stores with --store-name, or drop --store-group to use every store of the deployment")
			}
			groups := DeploymentGroups(d)
			list := StoreList{Groups: groups}
			for i := range groups {
				list.Indexes = append(list.Indexes, i+1)
			}
			return list, d, nil
		}
	}
	var entries []storeEntry
	for _, spec := range f.Stores {
		e, clear, err := parseStore(spec)
		if err != nil {
			return StoreList{}, nil, err
		}
		if clear {
			entries = nil
			continue
		}
		entries = append(entries, e)
	}
	for _, spec := range f.Names {
		e, err := parseStoreName(spec, d)
		if err != nil {
			return StoreList{}, nil, err
		}
		entries = append(entries, e)
	}
	sizes, err := parseStoreGroups(f.Groups)
	if err != nil {
		return StoreList{}, nil, err
	}
	list, err := buildStoreList(entries, sizes)
	return list, d, err
}

// StoreGroups returns, per group, the client addresses of its stores, from
// a deployment file or from UM ume_store specs (see Stores).
func StoreGroups(deploymentPath string, stores []string) ([][]string, *placement.Deployment, error) {
	list, d, err := Stores(deploymentPath, StoreFlags{Stores: stores})
	return list.Groups, d, err
}

// DeploymentGroups lists the client addresses of every group in order.
func DeploymentGroups(d *placement.Deployment) [][]string {
	var out [][]string
	for i := 1; ; i++ {
		ms := d.Members(i)
		if len(ms) == 0 {
			return out
		}
		var addrs []string
		for _, m := range ms {
			addrs = append(addrs, m.ClientAddr())
		}
		out = append(out, addrs)
	}
}

// ParseStores parses UM ume_store specs, [DomainID:]IP:port[:RegID[:GroupIDX]],
// into groups in increasing GroupIDX order (see Stores).
func ParseStores(specs []string) ([][]string, error) {
	list, _, err := Stores("", StoreFlags{Stores: specs})
	return list.Groups, err
}

// parseStore parses one ume_store spec. clear is true for 0.0.0.0:0.
// Whether the spec starts with a DomainID is decided by its first field
// being a dotted IPv4 address or not.
func parseStore(spec string) (storeEntry, bool, error) {
	const want = "want IP:port[:RegID[:GroupIDX]], optionally after DomainID:"
	parts := strings.Split(spec, ":")
	var domain uint64
	if len(parts) >= 3 && net.ParseIP(parts[0]) == nil && net.ParseIP(parts[1]) != nil {
		var err error
		if domain, err = strconv.ParseUint(parts[0], 10, 32); err != nil {
			return storeEntry{}, false, fmt.Errorf("--store %q: %q is neither an IP address nor a DomainID (0..4294967295)", spec, parts[0])
		}
		parts = parts[1:]
	}
	if len(parts) < 2 || len(parts) > 4 {
		return storeEntry{}, false, fmt.Errorf("--store %q: %s", spec, want)
	}
	ip := net.ParseIP(parts[0])
	if ip == nil || ip.To4() == nil {
		return storeEntry{}, false, fmt.Errorf("--store %q: %q is not an IP address (UM store lists take dotted IPv4 addresses; name a deployment's store with --store-name)", spec, parts[0])
	}
	if ip.IsUnspecified() && parts[1] == "0" && len(parts) == 2 {
		return storeEntry{}, true, nil
	}
	if p, err := strconv.Atoi(parts[1]); err != nil || p < 1 || p > 65535 {
		return storeEntry{}, false, fmt.Errorf("--store %q: port %q is not 1..65535", spec, parts[1])
	}
	e := storeEntry{spec: spec, flag: "--store", addr: net.JoinHostPort(parts[0], parts[1]), domain: uint32(domain)}
	if err := e.parseIDs("--store", parts[2:]); err != nil {
		return storeEntry{}, false, err
	}
	return e, false, nil
}

// parseStoreName parses one ume_store_name spec and resolves the name
// through the deployment.
func parseStoreName(spec string, d *placement.Deployment) (storeEntry, error) {
	parts := strings.Split(spec, ":")
	if len(parts) > 3 {
		return storeEntry{}, fmt.Errorf("--store-name %q: want NAME[:RegID[:GroupIDX]]", spec)
	}
	name := parts[0]
	if err := checkStoreName(name); err != nil {
		return storeEntry{}, fmt.Errorf("--store-name %q: %w", spec, err)
	}
	ref, ok := d.StoreByName(name)
	if !ok {
		var names []string
		for _, r := range d.Stores() {
			names = append(names, r.Store.Name)
		}
		return storeEntry{}, fmt.Errorf("--store-name %q: the deployment has no store %q (it has %s)", spec, name, strings.Join(names, ", "))
	}
	e := storeEntry{spec: spec, flag: "--store-name", addr: ref.ClientAddr(), group: ref.Group}
	if err := e.parseIDs("--store-name", parts[1:]); err != nil {
		return storeEntry{}, err
	}
	return e, nil
}

// checkStoreName applies UM's context-name rule: 1 to 128 characters,
// letters, digits, '-' and '_'.
func checkStoreName(name string) error {
	if name == "" || len(name) > MaxStoreNameLen {
		return fmt.Errorf("a store name is 1 to %d characters", MaxStoreNameLen)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%q is not allowed in a store name (letters, digits, '-' and '_')", c)
		}
	}
	return nil
}

// parseIDs reads the optional RegID and GroupIDX fields.
func (e *storeEntry) parseIDs(flag string, fields []string) error {
	if len(fields) > 0 {
		id, err := strconv.ParseUint(fields[0], 10, 32)
		if err != nil {
			return fmt.Errorf("%s %q: RegID %q is not a number 0..4294967295 (0: a new registration)", flag, e.spec, fields[0])
		}
		e.regID = uint32(id)
	}
	if len(fields) > 1 {
		idx, err := strconv.Atoi(fields[1])
		if err != nil || idx < 0 || idx > MaxGroupIndex {
			return fmt.Errorf("%s %q: group index %q is not 0..%d", flag, e.spec, fields[1], MaxGroupIndex)
		}
		e.index = idx
	}
	return nil
}

// parseStoreGroups parses ume_store_group specs into GroupIDX -> GroupSZ,
// in the order given (which must be increasing); nil if none were given.
func parseStoreGroups(specs []string) ([][2]int, error) {
	var out [][2]int
	given := false
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		if len(parts) != 2 {
			return nil, fmt.Errorf("--store-group %q: want GroupIDX:GroupSZ", spec)
		}
		idx, err1 := strconv.Atoi(parts[0])
		size, err2 := strconv.Atoi(parts[1])
		if idx == 0 && size == 0 && err1 == nil && err2 == nil {
			out, given = nil, true
			continue
		}
		if err1 != nil || idx < 0 || idx > MaxGroupIndex {
			return nil, fmt.Errorf("--store-group %q: group index %q is not 0..%d", spec, parts[0], MaxGroupIndex)
		}
		if err2 != nil || size < 1 || size > 64 {
			return nil, fmt.Errorf("--store-group %q: group size %q is not 1..64", spec, parts[1])
		}
		if n := len(out); n > 0 && idx <= out[n-1][0] {
			return nil, fmt.Errorf("--store-group %q: groups must be given in increasing GroupIDX order (group %d came before)", spec, out[n-1][0])
		}
		out = append(out, [2]int{idx, size})
		given = true
	}
	if given && out == nil {
		out = [][2]int{} // given, then cleared: every group must be listed
	}
	return out, nil
}

// buildStoreList groups the entries by GroupIDX and checks them against
// each other and against the --store-group sizes (nil: none given).
func buildStoreList(entries []storeEntry, sizes [][2]int) (StoreList, error) {
	if len(entries) == 0 {
		return StoreList{}, errors.New("--store: the list is empty (0.0.0.0:0 cleared it); give at least one store")
	}
	byIndex := map[int][]storeEntry{}
	seen := map[string]string{}
	for _, e := range entries {
		if prev, ok := seen[e.addr]; ok {
			return StoreList{}, fmt.Errorf("%s %q: store %s is already listed (%q)", e.flag, e.spec, e.addr, prev)
		}
		seen[e.addr] = e.spec
		byIndex[e.index] = append(byIndex[e.index], e)
	}
	var list StoreList
	for idx := range byIndex {
		list.Indexes = append(list.Indexes, idx)
	}
	slices.Sort(list.Indexes)
	first := entries[0]
	differ := false
	for _, e := range entries {
		if e.regID != first.regID {
			differ = true
			if e.regID == 0 || first.regID == 0 {
				zero, other := e, first
				if first.regID == 0 {
					zero, other = first, e
				}
				return StoreList{}, fmt.Errorf("%s %q has RegID 0 but %q has %d: give every store its RegID (one each, as UM, or the same for all), or 0 to every store for a new registration",
					zero.flag, zero.spec, other.spec, other.regID)
			}
		}
	}
	deploymentGroup := map[int]int{} // deployment group -> GroupIDX that took it
	for _, idx := range list.Indexes {
		var addrs []string
		var ids []uint32
		for _, e := range byIndex[idx] {
			ids = append(ids, e.regID)
			if e.group != 0 {
				if other, ok := deploymentGroup[e.group]; ok && other != idx {
					return StoreList{}, fmt.Errorf("%s %q: the store is in deployment group %d, like the stores given GroupIDX %d: one group cannot be two (its stores are one replicated store)", e.flag, e.spec, e.group, other)
				}
				deploymentGroup[e.group] = idx
				if g := byIndex[idx][0].group; g != e.group {
					return StoreList{}, fmt.Errorf("%s %q: GroupIDX %d mixes stores of deployment groups %d and %d; give each deployment group its own GroupIDX", e.flag, e.spec, idx, g, e.group)
				}
			}
			addrs = append(addrs, e.addr)
			if e.domain != 0 {
				if list.Domains == nil {
					list.Domains = map[string]uint32{}
				}
				list.Domains[e.addr] = e.domain
			}
		}
		list.Groups = append(list.Groups, addrs)
		if differ {
			list.RegIDs = append(list.RegIDs, ids)
		}
	}
	if !differ {
		list.RegID = first.regID
	}
	if sizes == nil {
		return list, nil
	}
	sized := map[int]int{}
	for _, s := range sizes {
		sized[s[0]] = s[1]
		if _, ok := byIndex[s[0]]; !ok {
			return StoreList{}, fmt.Errorf("--store-group %d:%d: no store is given GroupIDX %d", s[0], s[1], s[0])
		}
	}
	for i, idx := range list.Indexes {
		size, ok := sized[idx]
		n := len(list.Groups[i])
		switch {
		case !ok:
			return StoreList{}, fmt.Errorf("%s %q is in group %d, which --store-group does not list: add --store-group %d:%d", byIndex[idx][0].flag, byIndex[idx][0].spec, idx, idx, n)
		case size > n:
			return StoreList{}, fmt.Errorf("group %d does not have enough stores specified: --store-group %d:%d, but %d given", idx, idx, size, n)
		case size < n:
			return StoreList{}, fmt.Errorf("group %d has %d stores given, more than --store-group %d:%d says it has", idx, n, idx, size)
		}
	}
	return list, nil
}
