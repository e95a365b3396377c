package placement

import (
	"fmt"
	"strings"
	"testing"
)

func TestDev(t *testing.T) {
	tests := []struct {
		address string
		base    int
		g1s1    string // raft and client address of G1S1
		g2s3    string // raft and client address of G2S3
	}{
		{"127.0.0.1", 14000, "127.0.0.1:14011 127.0.0.1:15011", "127.0.0.1:14023 127.0.0.1:15023"},
		{"127.0.0.1", 0, "127.0.0.1:14011 127.0.0.1:15011", "127.0.0.1:14023 127.0.0.1:15023"},
		{"::1", 20000, "[::1]:20011 [::1]:21011", "[::1]:20023 [::1]:21023"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.address, tt.base), func(t *testing.T) {
			d := Dev(tt.address, tt.base)
			if err := d.Validate(); err != nil {
				t.Fatalf("Dev is invalid: %v", err)
			}
			if d.Name != "dev" || d.Version != 1 {
				t.Errorf("name %q version %d", d.Name, d.Version)
			}
			layout := map[string]string{}
			for _, h := range []string{"A", "B"} {
				var names []string
				for _, r := range d.StoresOn(h) {
					names = append(names, r.Store.Name)
				}
				layout[h] = strings.Join(names, " ")
			}
			if layout["A"] != "G1S1 G1S2 G2S1" || layout["B"] != "G1S3 G2S2 G2S3" {
				t.Errorf("layout A=%q B=%q, want the 2+1 / 1+2 layout", layout["A"], layout["B"])
			}
			addrs := func(name string) string {
				r, ok := d.StoreByName(name)
				if !ok {
					t.Fatalf("no store %s", name)
				}
				return r.RaftAddr() + " " + r.ClientAddr()
			}
			if got := addrs("G1S1"); got != tt.g1s1 {
				t.Errorf("G1S1 at %s, want %s", got, tt.g1s1)
			}
			if got := addrs("G2S3"); got != tt.g2s3 {
				t.Errorf("G2S3 at %s, want %s", got, tt.g2s3)
			}
		})
	}
}

func TestDevMatchesPlan(t *testing.T) {
	d, _, err := Plan(Request{Name: "dev", Hosts: []Host{{"A", "127.0.0.1"}, {"B", "127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Dev("127.0.0.1", 14000).Marshal()
	b, _ := d.Marshal()
	if string(a) != string(b) {
		t.Errorf("Dev and Plan disagree:\n%s\n%s", a, b)
	}
}

func TestDevPortsTooHigh(t *testing.T) {
	if err := Dev("127.0.0.1", 65000).Validate(); err == nil || !strings.Contains(err.Error(), "is not a TCP port") {
		t.Errorf("want a port range error, got %v", err)
	}
}
