package storegroup_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/cli"
	"umstore/internal/clustertest"
	"umstore/internal/testpki"
	"umstore/placement"
	"umstore/publisher"
	"umstore/receiver"
	"umstore/storegroup"
	"umstore/wire"
)

// A deployment with mutual TLS and a token: the groups form over TLS, a
// client with the CA, a certificate and the token publishes; a client
// without TLS, with a certificate from another CA, or without the token is
// refused with a clear error, and nothing it sent is stored.
func TestSecureDeploymentRefusesStrangers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &placement.Deployment{Security: &placement.Security{
		TLS:       &placement.TLS{CA: pki.CA, Cert: pki.Cert, Key: pki.Key, ClientAuth: true, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey},
		TokenFile: filepath.Join(dir, "token"),
	}}
	sec, err := cli.StoreSecurity(d)
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, 2, func(cfg *storegroup.Config) { cfg.Security = sec })
	clientTLS, token, err := cli.ClientSecurity(d, cli.SecurityFlags{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.TLS, cfg.Token = "secure", c.Addrs(), clientTLS, token
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("an authorised publisher: %v", err)
	}
	if _, err := p.Send(ctx, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()

	// A publisher with the wrong token is told so at once.
	bad := cfg
	bad.Token = "guess"
	if _, err := publisher.New(ctx, bad); !errors.Is(err, wire.ErrUnauthorized) || !errors.Is(err, publisher.ErrRegistration) {
		t.Fatalf("publisher with a wrong token: %v, want ErrRegistration wrapping ErrUnauthorized", err)
	}

	// A publisher without a client certificate is told so at once: the
	// stores' TLS refusal, not too few groups answering at the time-out.
	noCert := cfg
	noCert.TLS = &tls.Config{RootCAs: clientTLS.RootCAs}
	start := time.Now()
	if _, err := publisher.New(ctx, noCert); !errors.Is(err, publisher.ErrRefused) || !errors.Is(err, wire.ErrTLSRefused) {
		t.Fatalf("publisher without a client certificate: %v, want ErrRefused wrapping wire.ErrTLSRefused", err)
	} else if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("publisher without a client certificate: refused after %v, want at once (within 3s): %v", took, err)
	} else {
		t.Logf("without a client certificate, refused after %v: %v", took, err)
	}

	// So is a receiver, in the stores' words.
	rcfg := receiver.DefaultConfig()
	rcfg.Source, rcfg.Groups, rcfg.Group, rcfg.Token = "secure", c.Addrs(), 1, token
	rcfg.TLS = &tls.Config{RootCAs: clientTLS.RootCAs}
	if r, err := receiver.New(rcfg); err != nil {
		t.Fatal(err)
	} else {
		start := time.Now()
		err := r.Read(ctx, 1, 1, func(receiver.Message) error { return nil })
		r.Close()
		if !errors.Is(err, wire.ErrTLSRefused) || time.Since(start) > 3*time.Second {
			t.Fatalf("receiver without a client certificate: %v after %v, want wire.ErrTLSRefused at once", err, time.Since(start))
		}
	}

	other, err := tls.LoadX509KeyPair(pki.OtherCert, pki.OtherKey)
	if err != nil {
		t.Fatal(err)
	}
	addr := c.Addrs()[0][0]
	tests := []struct {
		name    string
		dialer  *wire.Dialer
		wantErr error // nil: any error will do (a TLS failure)
	}{
		{"plain TCP", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, Token: token}, nil},
		{"no client certificate", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, Token: token, TLS: &tls.Config{RootCAs: clientTLS.RootCAs}}, nil},
		{"certificate from another CA", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, Token: token, TLS: &tls.Config{RootCAs: clientTLS.RootCAs, Certificates: []tls.Certificate{other}}}, nil},
		{"wrong CA for the store", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, Token: token, TLS: &tls.Config{RootCAs: x509.NewCertPool(), Certificates: clientTLS.Certificates}}, nil},
		{"no token", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, TLS: clientTLS}, wire.ErrUnauthorized},
		{"wrong token", &wire.Dialer{Client: "stranger", Timeout: 2 * time.Second, TLS: clientTLS, Token: "guess"}, wire.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, _, err := tt.dialer.Dial(ctx, addr)
			if err == nil {
				// Some TLS failures surface at the first exchange.
				_ = conn.NetConn().SetDeadline(time.Now().Add(2 * time.Second))
				err = conn.Send(&wire.Publish{ReqID: 1, Source: "intruder", FirstSeq: 1, Payloads: [][]byte{[]byte("x")}})
				if err == nil {
					var m wire.Message
					m, err = conn.Read()
					if err == nil {
						t.Fatalf("the store answered %#v to an unauthorised client", m)
					}
				}
				conn.Close()
			}
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	for g := 1; g <= 2; g++ {
		for _, m := range c.Members(g) {
			if _, ok, _ := c.Store(m.Name).Repository().Source("intruder"); ok {
				t.Fatalf("%s stored a message from an unauthorised client", m.Name)
			}
		}
	}
}
