package clientserver

import (
	"net"
	"strings"
	"testing"

	"umstore/internal/clientperm"
)

// Who may take a backup: as who may stop a store (the operator token when
// there is one), and with client identities only the deployment's own.
func TestMayOperate(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}
	remote := &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 5000}
	billing := &clientperm.Identity{Name: "billing"}
	for _, tc := range []struct {
		name            string
		client, op, got string // the store's tokens, the Backup's token
		who             *clientperm.Identity
		from            net.Addr
		refused         string // "" when it may
	}{
		{"operator token, carried", "c", "op", "op", nil, remote, ""},
		{"operator token, carried by a client identity", "c", "op", "op", billing, remote, ""},
		{"operator token, the client token instead", "c", "op", "c", nil, remote, "operator token"},
		{"operator token, none carried, from loopback", "", "op", "", nil, loopback, "operator token"},
		{"no operator token, a client identity", "c", "", "", billing, remote, `identity "billing" may not`},
		{"no operator token, the deployment's own token", "c", "", "", nil, remote, ""},
		{"no token, loopback", "", "", "", nil, loopback, ""},
		{"no token, another host", "", "", "", nil, remote, "only a client on loopback"},
	} {
		cs := &Server{Deps: Deps{Token: tc.client, OperatorToken: tc.op}}
		why := cs.mayOperate(tc.got, tc.who, tc.from, "taking a backup")
		if (why == "") != (tc.refused == "") || !strings.Contains(why, tc.refused) {
			t.Errorf("%s: %q, want refusal %q", tc.name, why, tc.refused)
		}
	}
}
