package storehost

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"umstore/placement"
)

// A host given by name gets the one address its stores listen on, or an
// error naming the host, the name and what went wrong.
func TestHostAddress(t *testing.T) {
	answers := map[string][]string{
		"one.example":     {"10.0.0.1"},
		"dual.example":    {"::1", "127.0.0.1"},
		"v6.example":      {"fd00::1"},
		"twice.example":   {"10.0.0.1", "10.0.0.1"},
		"mapped.example":  {"::ffff:10.0.0.3"},
		"rr.example":      {"10.0.0.1", "10.0.0.2"},
		"rr6.example":     {"fd00::1", "fd00::2"},
		"nothing.example": {},
	}
	lookup := func(_ context.Context, _, name string) ([]netip.Addr, error) {
		ips, ok := answers[name]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
		}
		var out []netip.Addr
		for _, s := range ips {
			out = append(out, netip.MustParseAddr(s))
		}
		return out, nil
	}
	defer func(old func(context.Context, string, string) ([]netip.Addr, error)) { lookupNetIP = old }(lookupNetIP)
	lookupNetIP = lookup
	for _, tc := range []struct {
		address string
		want    string   // the address, or "" for an error
		err     []string // parts of the error
	}{
		{"10.0.0.9", "10.0.0.9", nil},
		{"::1", "::1", nil},
		{"one.example", "10.0.0.1", nil},
		{"dual.example", "127.0.0.1", nil},
		{"v6.example", "fd00::1", nil},
		{"twice.example", "10.0.0.1", nil},
		{"mapped.example", "10.0.0.3", nil},
		{"nosuch.example", "", []string{`host B: its address "nosuch.example" does not resolve`, "no such host", "give the host's IP address"}},
		{"rr.example", "", []string{`host B: its address "rr.example" resolves to 2 addresses (10.0.0.1, 10.0.0.2)`, "give that address"}},
		{"rr6.example", "", []string{"resolves to 2 addresses (fd00::1, fd00::2)"}},
		{"nothing.example", "", []string{"resolves to no IP address"}},
	} {
		got, err := hostAddress(context.Background(), placement.Host{Name: "B", Address: tc.address})
		if tc.want != "" {
			if err != nil || got.String() != tc.want {
				t.Errorf("%s: %v, %v; want %s", tc.address, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: %v, want an error", tc.address, got)
			continue
		}
		for _, w := range tc.err {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.address, err, w)
			}
		}
	}
}

// A host whose name does not resolve, or whose address is not this
// machine's, is refused by Configs with an error naming the host and the
// address, never one that blames another store for the port.
func TestConfigsRefusesAddressesThatCannotBeListenedOn(t *testing.T) {
	for _, tc := range []struct {
		address string
		want    []string
	}{
		// .invalid never resolves (RFC 2606).
		{"store-b.invalid", []string{`host B: its address "store-b.invalid" does not resolve`, "store-b.invalid"}},
		// TEST-NET-1 (RFC 5737) is nobody's address.
		{"192.0.2.1", []string{"host B: its address 192.0.2.1 cannot be listened on here", "run host B's stores on the machine that has this address"}},
	} {
		d := placement.Dev("127.0.0.1", 14000)
		d.Hosts[1].Address = tc.address
		_, err := Configs(d, "B", t.TempDir(), BaseConfig(placement.DefaultPolicy()))
		if err == nil {
			t.Errorf("%s: accepted", tc.address)
			continue
		}
		if strings.Contains(err.Error(), "another store") {
			t.Errorf("%s: %q blames another store", tc.address, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.address, err, w)
			}
		}
	}
}

// A name that resolves to this machine works as the host's address, and
// its stores' connections leave from what it resolves to.
func TestConfigsWithAName(t *testing.T) {
	defer func(old func(context.Context, string, string) ([]netip.Addr, error)) { lookupNetIP = old }(lookupNetIP)
	lookupNetIP = func(_ context.Context, _, name string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.2")}, nil
	}
	d := placement.Dev("127.0.0.1", 14000)
	d.Hosts[0].Address = "host-a.example"
	cfgs, err := Configs(d, "A", t.TempDir(), BaseConfig(placement.DefaultPolicy()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if !c.LocalIP.Equal(net.ParseIP("127.0.0.2")) {
			t.Errorf("%s: local IP %v, want 127.0.0.2", c.Name, c.LocalIP)
		}
		if self := c.Members[0]; !strings.HasPrefix(self.RaftAddr, "host-a.example:") {
			t.Errorf("%s: member address %s, want the name kept", c.Name, self.RaftAddr)
		}
	}
}
