package deploystop

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"umstore/deploystatus"
	"umstore/internal/clustertest"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

func names(refs []placement.StoreRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Store.Name)
	}
	return out
}

// Followers stop before their leader, group by group; a group without a
// leader stops in the deployment's order; --host keeps one host's stores.
func TestOrder(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	v := deploystatus.View{Groups: []deploystatus.Group{{Index: 1, Leader: "G1S1"}, {Index: 2}}}
	for _, tc := range []struct {
		host string
		want []string
	}{
		{"", []string{"G1S2", "G1S3", "G1S1", "G2S1", "G2S2", "G2S3"}},
		{"A", []string{"G1S2", "G1S1", "G2S1"}},
		{"B", []string{"G1S3", "G2S2", "G2S3"}},
	} {
		if got := names(Order(d, v, tc.host)); !slices.Equal(got, tc.want) {
			t.Errorf("host %q: %v, want %v", tc.host, got, tc.want)
		}
	}
}

// ref describes a store at a client address.
func ref(t *testing.T, name, addr string) placement.StoreRef {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return placement.StoreRef{Group: 1, Store: placement.Store{Name: name, ClientPort: n}, Host: placement.Host{Name: "A", Address: host}}
}

// A running store asked to stop stops; one that does not answer counts as
// stopped already.
func TestStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a group of stores")
	}
	c := clustertest.Start(t, 1, nil)
	m := c.Members(1)[2]
	s := c.Store(m.Name)
	dialer := &wire.Dialer{Client: "test", Timeout: 2 * time.Second}
	if err := Store(ref(t, m.Name, m.ClientAddr), dialer, "", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// It no longer answers; it finishes closing its files on its own.
	c.Eventually(30*time.Second, m.Name+" has stopped", func() bool {
		select {
		case <-s.Done():
			return true
		default:
			return false
		}
	})
	if err := Store(ref(t, m.Name, m.ClientAddr), dialer, "", time.Second); err != nil {
		t.Fatalf("a store that is gone: %v", err)
	}
}

// Store sends the operator token: without it a store that has one refuses
// and Store says why; with it the store stops.
func TestStoreSendsTheOperatorToken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a group of stores")
	}
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) { cfg.Security.OperatorToken = "op-secret" })
	m := c.Members(1)[2]
	s := c.Store(m.Name)
	dialer := &wire.Dialer{Client: "test", Timeout: 2 * time.Second}
	err := Store(ref(t, m.Name, m.ClientAddr), dialer, "", 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "operator token") {
		t.Fatalf("without the operator token: %v, want a refusal naming it", err)
	}
	if err := Store(ref(t, m.Name, m.ClientAddr), dialer, "op-secret", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Eventually(30*time.Second, m.Name+" has stopped", func() bool {
		select {
		case <-s.Done():
			return true
		default:
			return false
		}
	})
}
