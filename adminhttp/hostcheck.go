package adminhttp

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"umstore/placement"
)

// allowedHosts decides which Host headers the admin server answers. A page
// in a browser can be made to reach a loopback or private address under a
// name of the attacker's (DNS rebinding: evil.example first resolves to
// the attacker, then to 127.0.0.1); the browser then treats the answers as
// evil.example's own and lets its script read them. Refusing every Host
// that is not a name of this server ends that: such a request carries the
// attacker's name.
//
// Allowed, without any configuration: an IP literal (a page served from
// an IP address is that address's own, so no name was rebound), localhost
// and names under .localhost, this machine's host name, the addresses of
// the deployment's hosts (names an operator wrote), and every name in
// extra (--admin-allowed-host; "*" turns the check off, for a proxy that
// passes on names of its own).
type allowedHosts struct {
	any   bool
	names map[string]bool
}

func newAllowedHosts(d *placement.Deployment, extra []string) allowedHosts {
	a := allowedHosts{names: map[string]bool{"localhost": true}}
	if h, err := os.Hostname(); err == nil && h != "" {
		a.names[normalHost(h)] = true
	}
	if d != nil {
		for _, h := range d.Hosts {
			a.names[normalHost(h.Address)] = true
		}
	}
	for _, n := range extra {
		if n == "*" {
			a.any = true
		}
		a.names[normalHost(n)] = true
	}
	return a
}

// normalHost is a name as it is compared: lower case, no trailing dot, no
// port.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// allows reports whether a request with this Host header is answered.
func (a allowedHosts) allows(hostHeader string) bool {
	if a.any || hostHeader == "" { // HTTP/1.0 without Host: no browser sends that
		return true
	}
	h := normalHost(hostHeader)
	if net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	return a.names[h]
}

// wrap refuses, with 421 Misdirected Request, every request whose Host is
// not allowed, saying how to allow it.
func (a allowedHosts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allows(r.Host) {
			http.Error(w, fmt.Sprintf("421 misdirected request: %q is not a name of this admin server (a guard against DNS rebinding); reach it by IP address or localhost, or start umstored with --admin-allowed-host %s", r.Host, normalHost(r.Host)), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
