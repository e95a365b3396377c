package clientserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"umstore/internal/clientperm"
	"umstore/internal/groupclient"
	"umstore/internal/testpki"
	"umstore/repository"
	"umstore/wire"
)

const deploymentToken = "deployment-token"

// testIdentities is a deployment's client identities for the tests:
// billing publishes orders.>, receives orders.eu and consumes as billing.*;
// audit only receives.
func testIdentities(t *testing.T) *clientperm.Set {
	t.Helper()
	mustPatterns := func(texts ...string) []clientperm.Pattern {
		ps, err := clientperm.ParsePatterns(texts)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	set, err := clientperm.NewSet([]clientperm.Identity{
		{Name: "billing", Token: "billing-token", Publish: mustPatterns("orders.>"), Receive: mustPatterns("orders.eu"), Receivers: mustPatterns("billing.*")},
		{Name: "audit", Token: "audit-token", Receive: mustPatterns(">")},
	}, deploymentToken)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// dialToken opens a connection to cs presenting token.
func dialToken(t *testing.T, cs *Server, token string) (*wire.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := (&wire.Dialer{Client: "test", Token: token}).Dial(ctx, cs.Addr().String())
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestIdentityPermissions sends each request as an identity and checks
// that what its identity allows is served and the rest refused with
// CodeForbidden, naming the identity and the permission. The deployment's
// own token may do everything.
func TestIdentityPermissions(t *testing.T) {
	cs := testServer(t, Limits{}, nil, func(d *Deps) {
		d.Token = deploymentToken
		d.Identities = testIdentities(t)
	})
	for _, tc := range []struct {
		name  string
		token string
		req   wire.Message
		want  string // "" served, else the refusal's text
	}{
		{"publish allowed", "billing-token", &wire.Register{ReqID: 1, Source: "orders.eu", Session: "s1"}, ""},
		{"publish refused", "billing-token", &wire.Register{ReqID: 1, Source: "payments", Session: "s1"},
			`forbidden: identity "billing" may not publish source "payments" (its publish patterns: orders.>)`},
		{"publish refused to a receive-only identity", "audit-token", &wire.Register{ReqID: 1, Source: "orders.eu", Session: "s1"},
			`forbidden: identity "audit" may not publish source "orders.eu" (its publish patterns: none)`},
		{"register source refused", "billing-token", &wire.RegisterSource{ReqID: 1, Source: "orders", Session: "s1"},
			`forbidden: identity "billing" may not publish source "orders"`},
		{"fetch allowed", "billing-token", &wire.Fetch{ReqID: 1, Source: "orders.eu", From: 1, To: 10}, ""},
		{"fetch refused", "billing-token", &wire.Fetch{ReqID: 1, Source: "orders.us", From: 1, To: 10},
			`forbidden: identity "billing" may not receive source "orders.us" (its receive patterns: orders.eu)`},
		{"range digest refused", "billing-token", &wire.RangeDigest{ReqID: 1, Source: "orders.us", From: 1, To: 10},
			`forbidden: identity "billing" may not receive source "orders.us"`},
		{"subscribe allowed", "billing-token", &wire.Subscribe{ReqID: 1, Source: "orders.eu", From: 1}, ""},
		{"subscribe refused", "billing-token", &wire.Subscribe{ReqID: 1, Source: "payments", From: 1},
			`forbidden: identity "billing" may not receive source "payments"`},
		{"subscribe as another's receiver refused", "billing-token", &wire.Subscribe{ReqID: 1, Source: "orders.eu", From: 1, Receiver: "app1"},
			`forbidden: identity "billing" may not use receiver name "app1" (its receiver patterns: billing.*)`},
		{"receiver name allowed", "billing-token", &wire.RegisterReceiver{ReqID: 1, Source: "orders.eu", Receiver: "billing.app1", Session: "r1"}, ""},
		{"receiver name refused", "billing-token", &wire.RegisterReceiver{ReqID: 1, Source: "orders.eu", Receiver: "app1", Session: "r1"},
			`forbidden: identity "billing" may not use receiver name "app1"`},
		{"receiver of a source it may not receive refused", "billing-token", &wire.RegisterReceiver{ReqID: 1, Source: "orders.us", Receiver: "billing.app1", Session: "r1"},
			`forbidden: identity "billing" may not receive source "orders.us"`},
		{"consumed as another's receiver refused", "billing-token", &wire.Consumed{ReqID: 1, Source: "orders.eu", Receiver: "app1", Seq: 95},
			`forbidden: identity "billing" may not use receiver name "app1"`},
		{"consumed-as another's receiver refused", "billing-token", &wire.ConsumedAs{ReqID: 1, Source: "orders.eu", Receiver: "app1", Session: "r1", Seq: 95},
			`forbidden: identity "billing" may not use receiver name "app1"`},
		{"stopping a store refused to a client's identity", "audit-token", &wire.Shutdown{ReqID: 1},
			`forbidden: identity "audit" may not stop stores: only the deployment's own token may`},
		{"the deployment's token may publish anything", deploymentToken, &wire.Register{ReqID: 1, Source: "payments", Session: "s1"}, ""},
		{"the deployment's token may receive anything", deploymentToken, &wire.Fetch{ReqID: 1, Source: "payments", From: 1, To: 10}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dialToken(t, cs, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			got := answer(t, c, tc.req)
			if tc.want == "" && got != "" {
				t.Fatalf("refused: %s", got)
			}
			if tc.want != "" && !strings.HasPrefix(got, tc.want) {
				t.Fatalf("answered %q, want a refusal starting %q", got, tc.want)
			}
		})
	}
}

// TestIdentityHello checks who is admitted at Hello, with identities and
// without: with them, a token of no identity is refused at once with a
// clear refusal; without them, the deployment's token alone admits, as
// before identities existed.
func TestIdentityHello(t *testing.T) {
	withIDs := testServer(t, Limits{}, nil, func(d *Deps) {
		d.Token = deploymentToken
		d.Identities = testIdentities(t)
	})
	without := testServer(t, Limits{}, nil, func(d *Deps) { d.Token = deploymentToken })
	open := testServer(t, Limits{}, nil, nil)
	for _, tc := range []struct {
		name    string
		cs      *Server
		token   string
		refusal string // "" admitted
	}{
		{"an identity's token", withIDs, "billing-token", ""},
		{"the deployment's token", withIDs, deploymentToken, ""},
		{"an unknown token", withIDs, "stolen-token", "no client identity of this deployment matches this client"},
		{"no token", withIDs, "", "no client identity of this deployment matches this client"},
		{"no identities: the deployment's token", without, deploymentToken, ""},
		{"no identities: an identity's token is just a wrong token", without, "billing-token", "this deployment requires a token"},
		{"no identities, no token: anyone", open, "anything", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := dialToken(t, tc.cs, tc.token)
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusal == "":
				// Admitted, and to everything without identities.
				if got := answer(t, c, &wire.Register{ReqID: 1, Source: "payments", Session: "s1"}); tc.cs != withIDs && got != "" {
					t.Fatalf("Register refused without identities: %s", got)
				}
			case err == nil:
				t.Fatal("admitted, want a refusal")
			case !errors.Is(err, wire.ErrUnauthorized) || !strings.Contains(err.Error(), tc.refusal):
				t.Fatalf("refused with %v, want ErrUnauthorized saying %q", err, tc.refusal)
			case time.Since(start) > 2*time.Second:
				t.Fatalf("the refusal took %v", time.Since(start))
			}
		})
	}
}

// TestIdentityByTLSName names a client by its verified certificate: the
// client certificate's Subject CN is an identity's tls-name, so a client
// presenting it without a token is that identity, allowed what it may and
// refused the rest by name; a certificate of the same CA that names no
// identity is refused at Hello.
func TestIdentityByTLSName(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	load := func(cert, key string) tls.Certificate {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{load(pki.Cert, pki.Key)}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	receive, _ := clientperm.ParsePatterns([]string{">"})
	ids, err := clientperm.NewSet([]clientperm.Identity{{Name: "audit", TLSName: "umstore client", Receive: receive}}, deploymentToken)
	if err != nil {
		t.Fatal(err)
	}
	cs := testServer(t, Limits{}, serverTLS, func(d *Deps) {
		d.Token = deploymentToken
		d.Identities = ids
	})
	dialAs := func(cert tls.Certificate) (*wire.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := &wire.Dialer{Client: "test", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
		c, _, err := d.Dial(ctx, cs.Addr().String())
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}

	c, err := dialAs(load(pki.ClientCert, pki.ClientKey))
	if err != nil {
		t.Fatalf("the client certificate named in tls-name was refused: %v", err)
	}
	if got := answer(t, c, &wire.Fetch{ReqID: 1, Source: "orders.eu", From: 1, To: 10}); got != "" {
		t.Fatalf("a Fetch audit may make: %s", got)
	}
	want := `forbidden: identity "audit" may not publish source "orders.eu"`
	if got := answer(t, c, &wire.Register{ReqID: 2, Source: "orders.eu", Session: "s1"}); !strings.HasPrefix(got, want) {
		t.Fatalf("a Register audit may not make: answered %q, want %q", got, want)
	}
	if _, err := dialAs(load(pki.ElsewhereCert, pki.ElsewhereKey)); !errors.Is(err, wire.ErrUnauthorized) || !strings.Contains(err.Error(), "no client identity") {
		t.Fatalf("a certificate naming no identity: %v, want refused at Hello", err)
	}
}

// TestIdentitySourcesList checks that a Sources list shows an identity
// only the sources it may publish or receive, and the deployment's own
// token all of them.
func TestIdentitySourcesList(t *testing.T) {
	cs := testServer(t, Limits{}, nil, func(d *Deps) {
		d.Token = deploymentToken
		d.Identities = testIdentities(t)
	})
	for i, src := range []string{"orders.eu", "orders.us", "payments"} {
		cmd := repository.EncodeRegister(repository.Register{Source: src, Session: "s", UnixNano: 1})
		if _, err := cs.Repo.Apply([]repository.Entry{{Index: uint64(i + 1), Term: 1, Data: cmd}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		token string
		want  []string
	}{
		{"billing-token", []string{"orders.eu", "orders.us"}}, // receives orders.eu, publishes orders.>
		{"audit-token", []string{"orders.eu", "orders.us", "payments"}},
		{deploymentToken, []string{"orders.eu", "orders.us", "payments"}},
	} {
		c, err := dialToken(t, cs, tc.token)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
		if err := c.Send(&wire.Sources{ReqID: 1}); err != nil {
			t.Fatal(err)
		}
		m, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		list, ok := m.(*wire.SourceList)
		if !ok {
			t.Fatalf("Sources answered %#v", m)
		}
		var got []string
		for _, s := range list.Sources {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s sees %v, want %v", tc.token, got, tc.want)
		}
	}
}

// TestSourcesArePaged: a leader answers Sources a page at a time, a page
// an identity may see none of still says where the next begins, and
// groupclient joins the pages into the whole list, each source once.
func TestSourcesArePaged(t *testing.T) {
	cs := testServer(t, Limits{}, nil, func(d *Deps) {
		d.Token = deploymentToken
		d.Identities = testIdentities(t)
	})
	n := sourcesPageCount*2 + 7
	var entries []repository.Entry
	for i := range n {
		name := fmt.Sprintf("bulk.%05d", i)
		entries = append(entries, repository.Entry{Index: uint64(i + 1), Term: 1, Data: repository.EncodeRegister(repository.Register{Source: name, Session: "s", UnixNano: 1})})
	}
	entries = append(entries, repository.Entry{Index: uint64(n + 1), Term: 1, Data: repository.EncodeRegister(repository.Register{Source: "orders.eu", Session: "s", UnixNano: 1})})
	if _, err := cs.Repo.Apply(entries); err != nil {
		t.Fatal(err)
	}
	raw, err := dialToken(t, cs, deploymentToken)
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
	if err := raw.Send(&wire.Sources{ReqID: 1}); err != nil {
		t.Fatal(err)
	}
	if m, err := raw.Read(); err != nil {
		t.Fatal(err)
	} else if l, ok := m.(*wire.SourceList); !ok || len(l.Sources) != sourcesPageCount || l.Next != l.Sources[len(l.Sources)-1].Name {
		t.Fatalf("the first page: %T, want %d sources and the last one's name as Next", m, sourcesPageCount)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		token string
		want  int
	}{
		{deploymentToken, n + 1},
		{"billing-token", 1}, // sees orders.eu only, after three pages
	} {
		c := groupclient.New(1, []string{cs.Addr().String()}, &wire.Dialer{Client: "test", Token: tc.token})
		list, err := c.Sources(ctx)
		c.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.token, err)
		}
		seen := map[string]bool{}
		for _, s := range list.Sources {
			if seen[s.Name] {
				t.Fatalf("%s: %s listed twice", tc.token, s.Name)
			}
			seen[s.Name] = true
		}
		if len(seen) != tc.want || list.Next != "" {
			t.Fatalf("%s: %d sources listed, next %q; want %d", tc.token, len(seen), list.Next, tc.want)
		}
	}
}
