package placement

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func plannedTwoHosts(t *testing.T) *Deployment {
	t.Helper()
	d, _, err := Plan(Request{Hosts: []Host{{Name: "A", Address: "10.0.0.1"}, {Name: "B", Address: "10.0.0.2"}}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Host A moves to 10.0.0.4: its address and its three stores' addresses
// change, nothing else (names, groups, ports, the preferred hosts).
func TestReaddressMovesAHostsStores(t *testing.T) {
	d := plannedTwoHosts(t)
	nd, changes, err := Readdress(d, map[string]string{"A": "10.0.0.4"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.String())
	}
	want := []string{
		"host A: 10.0.0.1 -> 10.0.0.4",
		"store G1S1 (group 1): raft 10.0.0.1:14011, client 10.0.0.1:15011 -> raft 10.0.0.4:14011, client 10.0.0.4:15011",
		"store G1S2 (group 1): raft 10.0.0.1:14012, client 10.0.0.1:15012 -> raft 10.0.0.4:14012, client 10.0.0.4:15012",
		"store G2S1 (group 2): raft 10.0.0.1:14021, client 10.0.0.1:15021 -> raft 10.0.0.4:14021, client 10.0.0.4:15021",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d.Hosts[0].Address != "10.0.0.1" {
		t.Fatal("Readdress changed its argument")
	}
	if !reflect.DeepEqual(nd.Groups, d.Groups) || nd.Hosts[1] != d.Hosts[1] {
		t.Fatal("more than host A's address changed")
	}
}

func TestReaddressRefusals(t *testing.T) {
	d := plannedTwoHosts(t)
	for name, addrs := range map[string]map[string]string{
		"no host named":            {},
		"a host that is not there": {"C": "10.0.0.3"},
		"nothing changes":          {"A": "10.0.0.1"},
		"two hosts at one address": {"A": "10.0.0.2"},
		"an empty address":         {"A": " "},
	} {
		if _, _, err := Readdress(d, addrs); !errors.Is(err, ErrNotReaddress) {
			t.Errorf("%s: %v, want ErrNotReaddress", name, err)
		}
	}
}

// The file is edited in place: comments and layout stay, and it reads as
// the deployment Readdress returns.
func TestWithHostAddressesKeepsTheFile(t *testing.T) {
	d := plannedTwoHosts(t)
	raw, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw = append([]byte("# production, rack 4\n"), raw...)
	out, err := WithHostAddresses(raw, "prod.yaml", map[string]string{"A": "10.0.0.4"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "# production, rack 4") || !strings.Contains(string(out), "{name: A, address: 10.0.0.4}") {
		t.Fatalf("edited file:\n%s", out)
	}
	got, err := Parse(out, "prod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := Readdress(d, map[string]string{"A": "10.0.0.4"})
	if !reflect.DeepEqual(got.Hosts, want.Hosts) || !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Fatalf("the edited file reads as %+v, want %+v", got.Hosts, want.Hosts)
	}
	if _, err := WithHostAddresses(raw, "prod.yaml", map[string]string{"C": "10.0.0.3"}); !errors.Is(err, ErrNotReaddress) {
		t.Fatalf("an unknown host: %v", err)
	}
}
