package placement

// The checks that both Validate (for a deployment) and Plan (for a request)
// make, so that the two explain a problem in the same words.

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// WhyOddAtLeastThree explains why a group needs an odd number of at least
// three stores. It is part of the messages that refuse smaller or even
// groups.
const WhyOddAtLeastThree = `A group keeps working while more than half of its stores are up (a quorum).
With one store per group, that store is a quorum by itself: if its host fails
hard and the store comes back without its state, a publisher that restarts can
register with the empty store alone and start its source again at sequence
number 0, reusing sequence numbers that receivers already have (the "Why not
two stores?" case: two hosts, each running a one-store group). With two
stores, a quorum is both of them, so losing either one stops the group: no
more resilience than one store. An even number never helps: 4 stores survive
one failure, as 3 do. With 3 (or 5, 7...) stores, a store that comes back empty
is always outvoted by members that kept their state, and the group survives
the loss of a minority.`

// groupSizeProblem explains, in one sentence, what is wrong with a group of
// n stores, or returns "".
func groupSizeProblem(n int) string {
	const need = "a group needs an odd number of at least 3 stores"
	switch {
	case n == 0:
		return "no stores; " + need
	case n == 1:
		return "1 store; " + need + ": a single store is a quorum by itself, so if it comes back empty after a host failure a restarting publisher can register with it alone and reuse sequence numbers from 0 (the \"Why not two stores?\" hazard)"
	case n == 2:
		return "2 stores; " + need + ": a quorum of 2 is both stores, so losing either one stops the group"
	case n%2 == 0:
		return fmt.Sprintf("%d stores, an even number; use %d or %d: %d stores survive no more failures than %d, and a tie can leave the group without a majority", n, n-1, n+1, n, n-1)
	}
	return ""
}

// nameRE is what host and store names may look like. Store names become
// directory names, so no slashes, spaces or leading dots.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// hostnameRE matches one DNS label.
var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkName reports what is wrong with a host or store name, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "missing; give a name such as A or G1S1"
	case !nameRE.MatchString(name):
		return fmt.Sprintf("%q is not a usable name: use letters, digits, '.', '-' and '_' (at most 63, starting with a letter or digit)", name)
	}
	return ""
}

// checkAddress reports what is wrong with a host address, or "". It also
// returns the address in a canonical spelling, so that two spellings of one
// IP address count as the same address.
func checkAddress(addr string) (canonical, problem string) {
	if addr == "" {
		return "", "missing; give the IP address or host name the host's stores listen on"
	}
	if ip, err := netip.ParseAddr(addr); err == nil {
		if ip.IsUnspecified() {
			return "", fmt.Sprintf("%s is the unspecified address, which nobody can connect to; give the host's own address", addr)
		}
		return ip.String(), ""
	}
	if strings.Contains(addr, ":") {
		return "", fmt.Sprintf("%q is not an IP address or host name (give the address without a port; ports are set per store)", addr)
	}
	name := strings.TrimSuffix(addr, ".")
	if len(name) > 253 {
		return "", fmt.Sprintf("%q is too long for a host name", addr)
	}
	for _, label := range strings.Split(name, ".") {
		if !hostnameRE.MatchString(label) {
			return "", fmt.Sprintf("%q is not an IP address or host name", addr)
		}
	}
	return strings.ToLower(name), ""
}
