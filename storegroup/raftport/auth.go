package raftport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"umstore/internal/memberauth"
)

// Channel binding: keying material both ends export from the TLS session
// and mix into the member handshake's proofs, so a proof made on one TLS
// session is worthless on another (RFC 5705 exporter). BindingSize is the
// bytes exported, also for a member move's proofs (storegroup's
// members_move.go, under a label of its own).
const (
	bindingLabel = "EXPORTER-umstore-raft-member-v1"
	BindingSize  = 32
)

// memberCheck is what a store proves to its raft peers and checks of them:
// the other members of its group, where their hosts are, and the
// deployment's member secret.
type memberCheck struct {
	self   string
	group  int
	secret []byte   // nil: no member handshake
	fixed  []Member // the group as configured
	// current, if set, returns the group's members where they listen now
	// (Config.Current: the store's address book): a member whose host was
	// replaced is checked against its new host, and connections claiming
	// it from any other address are refused.
	current func() []Member
	// lookup resolves a host name (net.DefaultResolver's in production).
	lookup func(ctx context.Context, host string) ([]net.IPAddr, error)
}

func newMemberCheck(cfg Config) memberCheck {
	return memberCheck{
		self:    cfg.Name,
		group:   cfg.Group,
		secret:  cfg.MemberSecret,
		fixed:   cfg.Members,
		current: cfg.Current,
		lookup:  net.DefaultResolver.LookupIPAddr,
	}
}

// peerView is the other members as one connection's checks see them.
type peerView struct {
	hosts  map[string]string // name -> host address
	byAddr map[string]string // raft address -> name
	// moved are the members whose host is no longer the configured one:
	// only their new host may speak for them.
	moved map[string]bool
}

// view returns the other members where they listen now.
func (m memberCheck) view() peerView {
	v := peerView{hosts: map[string]string{}, byAddr: map[string]string{}, moved: map[string]bool{}}
	configured := map[string]string{}
	for _, mem := range m.fixed {
		configured[mem.Name] = HostOf(mem.RaftAddr)
	}
	members := m.fixed
	if m.current != nil {
		members = m.current()
	}
	for _, mem := range members {
		if mem.Name == m.self {
			continue
		}
		host := HostOf(mem.RaftAddr)
		v.hosts[mem.Name] = host
		v.byAddr[mem.RaftAddr] = mem.Name
		if host != configured[mem.Name] {
			v.moved[mem.Name] = true
		}
	}
	return v
}

// HostOf is the host part of a host:port address (the address itself if
// it has no port).
func HostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// accept runs the acceptor's side on a connection to the raft port whose
// deadline is set: TLS if serverTLS is set (and, when it has ClientCAs,
// the peer certificate's identity and the connection's source address
// against the deployment's hosts), then the member handshake if there is a
// secret. It returns the connection raft may read (the TLS one, with TLS),
// or why the peer is refused.
func (m memberCheck) accept(raw net.Conn, serverTLS *tls.Config, deadline time.Time) (net.Conn, Refusal, error) {
	conn := raw
	var binding []byte
	var id peerIdentity
	v := m.view()
	if serverTLS != nil {
		tc := tls.Server(raw, serverTLS)
		if err := tc.Handshake(); err != nil {
			return nil, timedOutOr(deadline, refusedTLS), fmt.Errorf("TLS handshake: %w", err)
		}
		st := tc.ConnectionState()
		if serverTLS.ClientCAs != nil {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			var why Refusal
			var err error
			id, why, err = m.identify(ctx, v, st, serverTLS.ClientCAs, raw.RemoteAddr())
			cancel()
			if err != nil {
				return nil, why, err
			}
		}
		if m.secret != nil {
			var err error
			if binding, err = st.ExportKeyingMaterial(bindingLabel, nil, BindingSize); err != nil {
				return nil, refusedTLS, fmt.Errorf("the TLS session exports no keying material to bind the member handshake to (%w); use TLS 1.3, or 1.2 with extended master secret", err)
			}
		}
		conn = tc
	}
	if m.secret == nil {
		return conn, 0, nil
	}
	var claimed bool // a well-formed hello naming a member it may be
	var why Refusal
	var claimErr error
	_, err := memberauth.Accept(conn, memberauth.Config{
		Secret:  m.secret,
		Self:    m.self,
		Binding: binding,
		Allowed: func(name string) bool {
			why, claimErr = m.claim(v, name, id, raw.RemoteAddr(), deadline)
			claimed = claimErr == nil
			return claimed
		},
	})
	switch {
	case err == nil:
		return conn, 0, nil
	case claimErr != nil:
		return nil, why, claimErr
	case !time.Now().Before(deadline):
		return nil, refusedTimeout, err
	case claimed:
		// After a good hello, a wrong proof, or a dialer that hung up on
		// this store's proof: the two hold different secrets.
		return nil, refusedSecret, err
	}
	return nil, refusedProtocol, err
}

// claim checks the store name a peer claims in its hello: another member
// of the group and, with TLS, one whose host the connection comes from and
// whose host the certificate is valid for. A member whose host was
// replaced (it moved to another address) is also refused from anywhere
// but its new host, TLS or not: its old incarnation, should it come back,
// never reaches the group's raft again.
func (m memberCheck) claim(v peerView, name string, id peerIdentity, remote net.Addr, deadline time.Time) (Refusal, error) {
	if _, ok := v.hosts[name]; !ok {
		return refusedNotMember, fmt.Errorf("the peer claims to be %q, which is not another member of group %d (%s)", name, m.group, v.describe())
	}
	if v.moved[name] {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		from := m.hostHas(ctx, v.hosts[name], net.ParseIP(RemoteIP(remote)))
		cancel()
		if !from {
			return refusedAddress, fmt.Errorf("the peer claims to be %s, which moved to host %s, but connects from %s (its old incarnation? it must stay stopped)", name, v.hosts[name], RemoteIP(remote))
		}
	}
	if !id.checked {
		return 0, nil
	}
	if !slices.Contains(id.fromHostOf, name) {
		return refusedAddress, fmt.Errorf("the peer claims to be %s, whose host is %s, but connects from %s", name, v.hosts[name], id.ip)
	}
	if !slices.Contains(id.certifiedFor, name) {
		return refusedCertificate, fmt.Errorf("the peer claims to be %s, but its certificate is not valid for %s's host %s", name, name, v.hosts[name])
	}
	return 0, nil
}

// peerIdentity is what a TLS peer's address and certificate show.
type peerIdentity struct {
	checked      bool
	ip           string
	fromHostOf   []string // members whose host has the peer's address
	certifiedFor []string // of those, the ones the certificate is valid for
}

// identify checks a TLS peer before it says a word: it must connect from
// the host of another member of the group, with a certificate signed by
// the deployment's CA that is valid as a server certificate for that
// host's address. A client's certificate (client use only, or issued for a
// name that is no store host) fails, wherever it connects from.
func (m memberCheck) identify(ctx context.Context, v peerView, st tls.ConnectionState, roots *x509.CertPool, remote net.Addr) (peerIdentity, Refusal, error) {
	id := peerIdentity{checked: true, ip: RemoteIP(remote)}
	ip := net.ParseIP(id.ip)
	if len(st.PeerCertificates) == 0 {
		return id, refusedCertificate, errors.New("the peer presented no certificate")
	}
	leaf := st.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range st.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	var certErr error
	verified := map[string]error{} // host -> result, each host checked once
	for _, name := range v.names() {
		host := v.hosts[name]
		if !m.hostHas(ctx, host, ip) {
			continue
		}
		id.fromHostOf = append(id.fromHostOf, name)
		err, done := verified[host]
		if !done {
			_, err = leaf.Verify(x509.VerifyOptions{
				Roots:         roots,
				Intermediates: inter,
				DNSName:       host,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			verified[host] = err
		}
		if err != nil {
			certErr = err
			continue
		}
		id.certifiedFor = append(id.certifiedFor, name)
	}
	if len(id.fromHostOf) == 0 {
		return id, refusedAddress, fmt.Errorf("the connection comes from %s, which is the host of no other member of group %d (%s)", id.ip, m.group, v.describe())
	}
	if len(id.certifiedFor) == 0 {
		return id, refusedCertificate, fmt.Errorf("the certificate presented (subject %q) is not a store certificate for this address: %w", leaf.Subject.String(), certErr)
	}
	return id, 0, nil
}

// hostHas reports whether host (an IP address or a name) has the address ip.
func (m memberCheck) hostHas(ctx context.Context, host string, ip net.IP) bool {
	return HostHas(ctx, m.lookup, host, ip)
}

// HostHas reports whether host (an IP address or a name) has the address
// ip, resolving a name with lookup (net.DefaultResolver.LookupIPAddr in
// production). A store uses it to check that a request about a member's
// host comes from that host, as the raft port checks its peers.
func HostHas(ctx context.Context, lookup func(ctx context.Context, host string) ([]net.IPAddr, error), host string, ip net.IP) bool {
	if ip == nil {
		return false
	}
	if hip := net.ParseIP(host); hip != nil {
		return hip.Equal(ip)
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if a.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// dial runs the dialer's side on a new connection to address whose
// deadline is set: TLS if clientTLS is set (the standard checks: the peer's
// certificate is valid for the address dialed), then the member handshake
// if there is a secret, expecting the member the deployment places there.
func (m memberCheck) dial(raw net.Conn, clientTLS *tls.Config, address string) (net.Conn, error) {
	conn := raw
	var binding []byte
	if clientTLS != nil {
		tc := tls.Client(raw, clientTLS)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("raft connection to %s: TLS handshake: %w", address, err)
		}
		conn = tc
		if m.secret != nil {
			var err error
			st := tc.ConnectionState()
			if binding, err = st.ExportKeyingMaterial(bindingLabel, nil, BindingSize); err != nil {
				return nil, fmt.Errorf("raft connection to %s: the TLS session exports no keying material to bind the member handshake to: %w", address, err)
			}
		}
	}
	if m.secret == nil {
		return conn, nil
	}
	v := m.view()
	want, known := v.byAddr[address]
	_, err := memberauth.Dial(conn, memberauth.Config{
		Secret:  m.secret,
		Self:    m.self,
		Binding: binding,
		Allowed: func(name string) bool {
			if known {
				return name == want
			}
			_, ok := v.hosts[name]
			return ok
		},
	})
	if err != nil {
		return nil, fmt.Errorf("raft connection to %s: %w", address, err)
	}
	return conn, nil
}

// names lists the other members, sorted.
func (v peerView) names() []string {
	names := make([]string, 0, len(v.hosts))
	for n := range v.hosts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// describe is "G1S2 on 10.0.0.1, G1S3 on 10.0.0.2", for messages.
func (v peerView) describe() string {
	var parts []string
	for _, n := range v.names() {
		parts = append(parts, n+" on "+v.hosts[n])
	}
	return strings.Join(parts, ", ")
}

// timedOutOr is refusedTimeout once the deadline has passed, else why.
func timedOutOr(deadline time.Time, why Refusal) Refusal {
	if !time.Now().Before(deadline) {
		return refusedTimeout
	}
	return why
}
