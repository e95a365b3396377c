package storegroup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
	"umstore/wire"
)

// With an operator token, a Shutdown stops a store only when it carries
// that token: the client token, no token or a wrong one is refused with an
// Error naming the operator token, and the store keeps serving.
func TestShutdownNeedsTheOperatorToken(t *testing.T) {
	t.Parallel()
	const clientToken, operatorToken = "client-secret", "operator-secret"
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.Security.Token, cfg.Security.OperatorToken = clientToken, operatorToken
	})
	m := c.Members(1)[2]
	s := c.Store(m.Name)
	d := &wire.Dialer{Client: "test", Token: clientToken, Timeout: 5 * time.Second}
	ask := func(token string) wire.Message {
		t.Helper()
		conn, _, err := d.Dial(context.Background(), m.ClientAddr)
		if err != nil {
			t.Fatalf("dial %s with the client token: %v", m.Name, err)
		}
		defer conn.Close()
		_ = conn.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		if err := conn.Send(&wire.Shutdown{ReqID: 7, Token: token}); err != nil {
			t.Fatal(err)
		}
		rep, err := conn.Read()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, token := range []string{"", clientToken, "operator-secreT"} {
		e, ok := ask(token).(*wire.Error)
		if !ok || e.Code != wire.CodeAuth || e.ReqID != 7 || !strings.Contains(e.Message, "operator token") {
			t.Fatalf("Shutdown with token %q: %#v, want an unauthorized Error naming the operator token", token, e)
		}
		select {
		case <-s.Done():
			t.Fatalf("the store stopped for a Shutdown with token %q", token)
		default:
		}
	}
	if ok, isOK := ask(operatorToken).(*wire.OK); !isOK || ok.ReqID != 7 {
		t.Fatalf("Shutdown with the operator token: %#v, want OK", ok)
	}
	c.Eventually(30*time.Second, m.Name+" stops for the operator token", func() bool {
		select {
		case <-s.Done():
			return true
		default:
			return false
		}
	})
}
