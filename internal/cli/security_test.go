package cli

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/internal/memberauth"
	"umstore/internal/testpki"
	"umstore/placement"
)

// leafOf returns the DER of the certificate a TLS configuration presents,
// or nil.
func leafOf(cfg *tls.Config) []byte {
	if cfg == nil || len(cfg.Certificates) == 0 {
		return nil
	}
	return cfg.Certificates[0].Certificate[0]
}

func certDER(t *testing.T, cert, key string) []byte {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Certificate[0]
}

// Clients present their own certificate, never the stores': the store's
// key stays on the store hosts. With client-auth and no client
// certificate, ClientSecurity says what to add.
func TestClientSecurityPresentsTheClientsCertificate(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	store, client := certDER(t, pki.Cert, pki.Key), certDER(t, pki.ClientCert, pki.ClientKey)
	deployment := func(t placement.TLS) *placement.Deployment {
		return &placement.Deployment{Security: &placement.Security{TLS: &t}}
	}
	base := placement.TLS{CA: pki.CA, Cert: pki.Cert, Key: pki.Key}
	withClient := base
	withClient.ClientAuth, withClient.ClientCert, withClient.ClientKey = true, pki.ClientCert, pki.ClientKey
	mutual := base
	mutual.ClientAuth = true
	cases := []struct {
		name    string
		d       *placement.Deployment
		flags   SecurityFlags
		want    []byte // the certificate presented; nil: none
		wantErr string
	}{
		{"server TLS only: no certificate", deployment(base), SecurityFlags{}, nil, ""},
		{"client-auth with the clients' certificate", deployment(withClient), SecurityFlags{}, client, ""},
		{"client-auth, the certificate given by flags", deployment(mutual), SecurityFlags{Cert: pki.ClientCert, Key: pki.ClientKey}, client, ""},
		{"client-auth without a client certificate", deployment(mutual), SecurityFlags{}, nil, "security.tls.client-cert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := ClientSecurity(tc.d, tc.flags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--tls-cert") {
					t.Fatalf("err %v, want one naming %s and --tls-cert", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := leafOf(cfg)
			if bytes.Equal(got, store) {
				t.Fatal("the client presents the stores' certificate")
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("presented certificate %x..., want %x...", got[:min(8, len(got))], tc.want[:min(8, len(tc.want))])
			}
		})
	}
}

// The stores' security carries the member secret the deployment names;
// a missing secret file is an error naming the key.
func TestStoreSecurityLoadsTheMemberSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.member-secret")
	if err := os.WriteFile(path, memberauth.NewSecret(), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ := memberauth.LoadSecret(path)
	sec, err := StoreSecurity(&placement.Deployment{Security: &placement.Security{MemberSecretFile: path}})
	if err != nil || !bytes.Equal(sec.MemberSecret, want) || sec.ServerTLS != nil || sec.Token != "" {
		t.Fatalf("StoreSecurity = %+v, %v; want the secret alone", sec, err)
	}
	_, err = StoreSecurity(&placement.Deployment{Security: &placement.Security{MemberSecretFile: filepath.Join(dir, "missing")}})
	if err == nil || !strings.Contains(err.Error(), "security.member-secret-file") {
		t.Fatalf("a missing secret file: %v", err)
	}
	if sec, err := StoreSecurity(&placement.Deployment{}); err != nil || sec.MemberSecret != nil {
		t.Fatalf("no security section: %+v, %v", sec, err)
	}
}
