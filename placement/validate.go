package placement

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"umstore/internal/clientperm"
	"umstore/quorum"
)

// Validate checks the deployment: the version is 1; host names are unique
// and addresses usable; group indexes run 1..N without repeats; every group
// has an odd number of at least three stores; store names are unique; every
// store names a known host and ports in 1..65535, and no address and port
// pair is used twice; the stability behaviours are known (an empty one
// stands for its default).
//
// Validate only reads the deployment; it never changes it, so it may be
// called on a shared deployment from any number of goroutines. Defaults are
// filled by [Deployment.FillDefaults], which [Parse] and [Plan] call.
//
// It reports every problem it finds, joined with [errors.Join]; each one is a
// [*FieldError] naming the key path and, for a file, the line.
func (d *Deployment) Validate() error {
	v := &validator{d: d}
	v.version()
	hosts := v.hosts()
	v.groups(hosts)
	v.stability()
	v.policy()
	v.security()
	return errors.Join(v.errs...)
}

// validator collects the problems of one deployment.
type validator struct {
	d    *Deployment
	errs []error
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{
		Source:  v.d.source,
		Line:    lineOf(v.d.lines, path),
		Path:    path,
		Problem: fmt.Sprintf(format, args...),
	})
}

func (v *validator) version() {
	switch v.d.Version {
	case FileVersion:
	case 0:
		v.add("version", "missing; add \"version: %d\" at the top of the file", FileVersion)
	default:
		v.add("version", "%d is not supported; this umstored reads version %d deployment files", v.d.Version, FileVersion)
	}
}

// hosts checks the hosts and returns the canonical address of each by name.
func (v *validator) hosts() map[string]string {
	addrs := map[string]string{}
	if len(v.d.Hosts) == 0 {
		v.add("hosts", "no hosts; list the hosts that run stores, e.g. - {name: A, address: 10.0.0.1}")
		return addrs
	}
	firstAt := map[string]int{}
	for i, h := range v.d.Hosts {
		p := fmt.Sprintf("hosts[%d]", i)
		if msg := checkName(h.Name); msg != "" {
			v.add(p+".name", "%s", msg)
		} else if j, dup := firstAt[h.Name]; dup {
			v.add(p+".name", "host %q is already defined at hosts[%d]; host names must be unique", h.Name, j)
		} else {
			firstAt[h.Name] = i
		}
		canon, msg := checkAddress(h.Address)
		if msg != "" {
			v.add(p+".address", "%s", msg)
			continue
		}
		if _, dup := addrs[h.Name]; !dup && h.Name != "" {
			addrs[h.Name] = canon
		}
	}
	return addrs
}

func (v *validator) groups(hostAddr map[string]string) {
	n := len(v.d.Groups)
	if n == 0 {
		v.add("groups", "no groups; a deployment needs at least one group of 3 stores (`umstored plan` lays them out)")
		return
	}
	indexAt := map[int]int{}
	storeAt := map[string]string{}
	portAt := map[string]string{}
	for i, g := range v.d.Groups {
		gp := fmt.Sprintf("groups[%d]", i)
		switch j, dup := indexAt[g.Index]; {
		case g.Index == 0:
			v.add(gp+".index", "missing; groups are numbered 1..%d", n)
		case g.Index < 1 || g.Index > n:
			v.add(gp+".index", "%d is out of range; with %d groups the indexes are 1..%d", g.Index, n, n)
		case dup:
			v.add(gp+".index", "index %d is already used by groups[%d]; each group needs its own index", g.Index, j)
		default:
			indexAt[g.Index] = i
		}
		if msg := groupSizeProblem(len(g.Stores)); msg != "" {
			v.add(gp+".stores", "%s", msg)
		}
		v.preferredHost(gp, g)
		for j, s := range g.Stores {
			sp := fmt.Sprintf("%s.stores[%d]", gp, j)
			if msg := checkName(s.Name); msg != "" {
				v.add(sp+".name", "%s", msg)
			} else if prev, dup := storeAt[s.Name]; dup {
				v.add(sp+".name", "store %q is already defined at %s; store names must be unique (they name data directories)", s.Name, prev)
			} else {
				storeAt[s.Name] = sp
			}
			addr, hostOK := hostAddr[s.Host]
			if s.Host == "" {
				v.add(sp+".host", "missing; name the host this store runs on")
			} else if _, known := v.d.HostByName(s.Host); !known {
				v.add(sp+".host", "unknown host %q (the hosts are %s)", s.Host, v.hostNames())
			}
			v.port(sp+".raft-port", s.RaftPort, addr, hostOK, portAt)
			v.port(sp+".client-port", s.ClientPort, addr, hostOK, portAt)
		}
	}
}

// preferredHost checks that a group's preferred host, if named, runs one of
// its stores.
func (v *validator) preferredHost(path string, g Group) {
	h := g.PreferredHost
	if h == "" || h == NoPreferredHost {
		return
	}
	for _, s := range g.Stores {
		if s.Host == h {
			return
		}
	}
	if _, known := v.d.HostByName(h); !known {
		v.add(path+".preferred-host", "unknown host %q (the hosts are %s; or %q for no preference)", h, v.hostNames(), NoPreferredHost)
		return
	}
	v.add(path+".preferred-host", "host %q runs none of the group's stores, so it cannot lead the group; name a host that does (best: the one holding its majority), or %q", h, NoPreferredHost)
}

// port checks one port and that no other store uses the same address and
// port. hostOK is false when the host is unknown or its address is bad; then
// only the range is checked.
func (v *validator) port(path string, port int, addr string, hostOK bool, portAt map[string]string) {
	switch {
	case port == 0:
		v.add(path, "missing; give a TCP port in 1..65535")
		return
	case port < 1 || port > 65535:
		v.add(path, "%d is not a TCP port; use 1..65535", port)
		return
	}
	if !hostOK {
		return
	}
	key := fmt.Sprintf("%s|%d", addr, port)
	if prev, dup := portAt[key]; dup {
		v.add(path, "port %d on %s is already used by %s; every store needs its own raft and client ports", port, addr, prev)
		return
	}
	portAt[key] = path
}

func (v *validator) hostNames() string {
	var names []string
	for _, h := range v.d.Hosts {
		if h.Name != "" {
			names = append(names, h.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (v *validator) security() {
	sec := v.d.Security
	if sec == nil {
		return
	}
	if sec.TLS == nil && sec.TokenFile == "" && sec.MemberSecretFile == "" && sec.OperatorTokenFile == "" && len(sec.Clients) == 0 {
		v.add("security", "is empty; give member-secret-file, tls (ca, cert, key), token-file and/or operator-token-file, or remove the section")
	}
	files := []struct{ key, val string }{
		{"security.token-file", sec.TokenFile},
		{"security.member-secret-file", sec.MemberSecretFile},
		{"security.operator-token-file", sec.OperatorTokenFile},
	}
	if t := sec.TLS; t != nil {
		files = append(files, []struct{ key, val string }{
			{"security.tls.ca", t.CA}, {"security.tls.cert", t.Cert}, {"security.tls.key", t.Key},
			{"security.tls.client-cert", t.ClientCert}, {"security.tls.client-key", t.ClientKey},
		}...)
	}
	for i, c := range sec.Clients {
		files = append(files, struct{ key, val string }{fmt.Sprintf("security.clients[%d].token-file", i), c.TokenFile})
	}
	for _, f := range files {
		if f.val != "" && !filepath.IsAbs(f.val) && !filepath.IsLocal(f.val) {
			v.add(f.key, "%q climbs out of the deployment file's directory; a relative path names a file in that directory or below it: move the file there, or give an absolute path if you mean a file elsewhere", f.val)
		}
	}
	v.clients(sec)
	if t := sec.TLS; t != nil {
		for _, f := range []struct{ key, val string }{{"ca", t.CA}, {"cert", t.Cert}, {"key", t.Key}} {
			if f.val == "" {
				v.add("security.tls."+f.key, "is required: a PEM file (relative paths are relative to the deployment file)")
			}
		}
		if (t.ClientCert == "") != (t.ClientKey == "") {
			v.add("security.tls.client-cert", "and client-key go together: name both the clients' certificate and its key, or neither")
		}
	}
}

// clients checks the client identities as far as the file alone tells
// (the token files are read, and compared, when the stores start):
// each named once, known by exactly one of a token file or a TLS name,
// its patterns valid; a TLS name needs client certificates, and
// identities need the deployment's own token, which the stores' own
// connections present.
func (v *validator) clients(sec *Security) {
	if len(sec.Clients) == 0 {
		return
	}
	if sec.TokenFile == "" {
		v.add("security.clients", "needs security.token-file: the stores' connections to one another and the operators' tools present the deployment's own token, which may do everything; give it a token file no client holds")
	}
	names := map[string]bool{}
	for i, c := range sec.Clients {
		key := fmt.Sprintf("security.clients[%d]", i)
		switch {
		case c.Name == "":
			v.add(key+".name", "is required: refusals and logs name the identity")
		case names[c.Name]:
			v.add(key+".name", "%q names another identity too: give each its own name", c.Name)
		}
		names[c.Name] = true
		if (c.TokenFile == "") == (c.TLSName == "") {
			v.add(key, "needs exactly one of token-file (the client's own token) or tls-name (its certificate's Subject CN or a DNS SAN)")
		}
		if c.TLSName != "" && (sec.TLS == nil || !sec.TLS.ClientAuth) {
			v.add(key+".tls-name", "needs security.tls with client-auth: true, or the stores never see a client's certificate")
		}
		for _, f := range []struct {
			key      string
			patterns []string
		}{{"publish", c.Publish}, {"receive", c.Receive}, {"receivers", c.Receivers}} {
			if _, err := clientperm.ParsePatterns(f.patterns); err != nil {
				v.add(key+"."+f.key, "%v", err)
			}
		}
	}
}

// stability checks the behaviours as they will be used (an empty one is its
// default) by the parsers of package quorum, which implements them.
func (v *validator) stability() {
	s := v.d.Stability.WithDefaults()
	if quorum.ParseIntragroup(s.Intragroup) != nil {
		v.add("stability.intragroup", "%q is not an intragroup behaviour; use one of %s", s.Intragroup, strings.Join(IntragroupBehaviours, ", "))
	}
	if _, err := quorum.ParseBehavior(s.Intergroup); err != nil {
		v.add("stability.intergroup", "%q is not an intergroup behaviour; use one of %s", s.Intergroup, strings.Join(IntergroupBehaviours, ", "))
	}
}
