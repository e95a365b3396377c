package clientserver

import (
	"net"
	"strings"
	"testing"

	"umstore/wire"
)

// Who may stop a store: the operator token when there is one; else any
// client that passed the handshake with the client token; with neither, a
// client on loopback only.
func TestMayStop(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}
	loopback6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 5000}
	remote := &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 5000}
	for _, tc := range []struct {
		name            string
		client, op, got string // the store's tokens, the Shutdown's token
		from            net.Addr
		refused         string // "" when it may stop
	}{
		{"operator token, carried", "c", "op", "op", remote, ""},
		{"operator token, the client token instead", "c", "op", "c", remote, "operator token"},
		{"operator token, none carried, even from loopback", "c", "op", "", loopback, "operator token"},
		{"operator token without a client token", "", "op", "", loopback, "operator token"},
		{"operator token without a client token, carried", "", "op", "op", remote, ""},
		{"client token only: the handshake decided", "c", "", "", remote, ""},
		{"no token, loopback", "", "", "", loopback, ""},
		{"no token, IPv6 loopback", "", "", "", loopback6, ""},
		{"no token, another host", "", "", "", remote, "only a client on loopback"},
	} {
		cs := &Server{Deps: Deps{Token: tc.client, OperatorToken: tc.op}}
		why := cs.mayStop(&wire.Shutdown{Token: tc.got}, tc.from)
		if (why == "") != (tc.refused == "") || !strings.Contains(why, tc.refused) {
			t.Errorf("%s: %q, want refusal %q", tc.name, why, tc.refused)
		}
	}
}
