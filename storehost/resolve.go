package storehost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"umstore/placement"
)

// resolveTimeout bounds the lookup of a host's name at start-up.
const resolveTimeout = 5 * time.Second

// lookupNetIP resolves names; tests replace it.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// localAddress returns the one IP address that the stores of host h listen
// on and leave from, and checks that it belongs to this machine.
//
// A deployment may give a host's address as a name. The name is resolved
// here, once, so that a name that does not resolve, or that resolves to
// no address of this machine, is refused with an error naming the host,
// the name and the reason, rather than with a bare error from a listener.
// The stores' own addresses stay the name: peers and clients resolve it
// when they dial, trying each of its addresses in turn.
//
// A host's stores listen on one address, so a name must say which: of
// what it resolves to, the IPv4 addresses count if there are any (Go's
// listener takes the first IPv4 address of a name; a name such as
// localhost often has one IPv4 and one IPv6 address), else the IPv6 ones,
// and exactly one must remain. A name with several (round-robin DNS) is
// refused: give the address itself.
func localAddress(ctx context.Context, h placement.Host) (netip.Addr, error) {
	ip, err := hostAddress(ctx, h)
	if err != nil {
		return netip.Addr{}, err
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		via := ""
		if ip.String() != h.Address {
			via = fmt.Sprintf(" (what %q resolves to)", h.Address)
		}
		return netip.Addr{}, fmt.Errorf("host %s: its address %s%s cannot be listened on here (%v): run host %s's stores on the machine that has this address, or correct the host's address in the deployment file", h.Name, ip, via, listenReason(err), h.Name)
	}
	ln.Close()
	return ip, nil
}

// hostAddress is h's address as one IP address: the address itself, or
// what its name resolves to (see localAddress for which one).
func hostAddress(ctx context.Context, h placement.Host) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(h.Address); err == nil {
		return ip.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := lookupNetIP(ctx, "ip", h.Address)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("host %s: its address %q does not resolve (%v): give the host's IP address in the deployment file, or make the name resolve on this machine (DNS or /etc/hosts)", h.Name, h.Address, err)
	}
	var v4, v6 []netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap()
		switch {
		case ip.Is4() && !slices.Contains(v4, ip):
			v4 = append(v4, ip)
		case ip.Is6() && !slices.Contains(v6, ip):
			v6 = append(v6, ip)
		}
	}
	candidates := v4
	if len(candidates) == 0 {
		candidates = v6
	}
	switch len(candidates) {
	case 0:
		return netip.Addr{}, fmt.Errorf("host %s: its address %q resolves to no IP address: give the host's IP address in the deployment file", h.Name, h.Address)
	case 1:
		return candidates[0], nil
	}
	list := make([]string, len(candidates))
	for i, ip := range candidates {
		list[i] = ip.String()
	}
	return netip.Addr{}, fmt.Errorf("host %s: its address %q resolves to %d addresses (%s), and a host's stores listen on one: give that address in the deployment file instead of the name", h.Name, h.Address, len(candidates), strings.Join(list, ", "))
}

// listenReason shortens a listen error to its cause ("bind: cannot assign
// requested address").
func listenReason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}
