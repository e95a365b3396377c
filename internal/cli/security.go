package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"umstore/internal/memberauth"
	"umstore/internal/securefile"
	"umstore/placement"
	"umstore/storegroup"
)

// SecurityFlags are the client commands' overrides of the deployment's
// security section, and what a client given only --store needs.
type SecurityFlags struct {
	CA, Cert, Key, TokenFile string
}

// ClientSecurity returns the TLS configuration and token a client uses with
// the deployment's stores: the deployment's security section (if any),
// overridden by flags. A nil *tls.Config means plain TCP.
//
// A client presents a certificate only of its own: --tls-cert/--tls-key,
// else security.tls.client-cert/client-key. It never presents the stores'
// certificate (security.tls.cert): that key belongs on the store hosts
// alone, and a raft port refuses any certificate but a store's from its
// own host anyway. With client-auth on and no client certificate, it says
// what to add rather than connecting to be refused.
func ClientSecurity(d *placement.Deployment, f SecurityFlags) (*tls.Config, string, error) {
	var sec placement.Security
	clientAuth := false
	if d != nil && d.Security != nil {
		sec = *d.Security
		if sec.TLS != nil {
			t := *sec.TLS
			clientAuth = t.ClientAuth
			t.CA = d.Resolve(t.CA)
			t.Cert, t.Key = d.Resolve(t.ClientCert), d.Resolve(t.ClientKey)
			sec.TLS = &t
		}
		sec.TokenFile = d.Resolve(sec.TokenFile)
	}
	if f.CA != "" || f.Cert != "" || f.Key != "" {
		t := placement.TLS{}
		if sec.TLS != nil {
			t = *sec.TLS
		}
		if f.CA != "" {
			t.CA = f.CA
		}
		if f.Cert != "" || f.Key != "" {
			t.Cert, t.Key = f.Cert, f.Key
		}
		sec.TLS = &t
	}
	if f.TokenFile != "" {
		sec.TokenFile = f.TokenFile
	}
	token, err := readToken(sec.TokenFile, clientTokenFile)
	if err != nil {
		return nil, "", err
	}
	if sec.TLS == nil {
		return nil, token, nil
	}
	pool, err := loadCA(sec.TLS.CA)
	if err != nil {
		return nil, "", err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientAuth && sec.TLS.Cert == "" && sec.TLS.Key == "" {
		return nil, "", errors.New("the stores require a client certificate (security.tls.client-auth in the deployment): name this client's certificate and key in security.tls.client-cert and client-key, or give --tls-cert and --tls-key; clients do not present the stores' certificate")
	}
	if sec.TLS.Cert != "" || sec.TLS.Key != "" {
		cert, err := loadKeyPair(sec.TLS.Cert, sec.TLS.Key, "the client certificate (security.tls.client-cert or --tls-cert)", "the client key (security.tls.client-key or --tls-key)")
		if err != nil {
			return nil, "", fmt.Errorf("load the client certificate %s / key %s: %w", sec.TLS.Cert, sec.TLS.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, token, nil
}

// StoreSecurity returns the stores' transport security from the
// deployment's security section (the zero value without one): the member
// secret from security.member-secret-file; the host's certificate, which
// serves the client and raft ports and is presented to raft peers; raft
// ports accept only a certificate signed by the deployment's CA that is
// valid for the host the peer connects from.
func StoreSecurity(d *placement.Deployment) (storegroup.Security, error) {
	var out storegroup.Security
	if d == nil || d.Security == nil {
		return out, nil
	}
	if f := d.Security.MemberSecretFile; f != "" {
		secret, err := memberauth.LoadSecret(d.Resolve(f))
		if err != nil {
			return out, fmt.Errorf("%w (security.member-secret-file in the deployment; every host that runs stores needs this file beside the deployment file, the same on all hosts)", err)
		}
		out.MemberSecret = secret
	}
	token, err := readToken(d.Resolve(d.Security.TokenFile), clientTokenFile)
	if err != nil {
		return out, err
	}
	out.Token = token
	if out.Clients, err = clientIdentities(d, token); err != nil {
		return out, err
	}
	t := d.Security.TLS
	if t == nil {
		return out, nil
	}
	pool, err := loadCA(d.Resolve(t.CA))
	if err != nil {
		return out, err
	}
	cert, err := loadKeyPair(d.Resolve(t.Cert), d.Resolve(t.Key), "the store certificate (security.tls.cert)", "the store key (security.tls.key)")
	if err != nil {
		return out, fmt.Errorf("load the store certificate %s / key %s (security.tls in the deployment): %w", d.Resolve(t.Cert), d.Resolve(t.Key), err)
	}
	out.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	if t.ClientAuth {
		out.ServerTLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	out.ClientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return out, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	pem, err := securefile.ReadPEM(path, "the CA certificate (security.tls.ca or --tls-ca)")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// loadKeyPair reads a certificate and its key through the checks of
// package securefile (regular files, at most securefile.MaxPEM each).
func loadKeyPair(certPath, keyPath, certWhat, keyWhat string) (tls.Certificate, error) {
	certPEM, err := securefile.ReadPEM(certPath, certWhat)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := securefile.ReadPEM(keyPath, keyWhat)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// clientTokenFile names the client token file in errors.
const clientTokenFile = "the token file (security.token-file or --token-file)"

// readToken reads a token file ("" when path is ""): one line of at
// most securefile.MaxToken bytes.
func readToken(path, what string) (string, error) {
	if path == "" {
		return "", nil
	}
	return securefile.ReadToken(path, what)
}

// AddSecurityFlags declares the client commands' security flags on fs.
func AddSecurityFlags(fs *pflag.FlagSet) *SecurityFlags {
	f := &SecurityFlags{}
	fs.StringVar(&f.CA, "tls-ca", "", "verify the stores' certificates with this CA `FILE` (default: the deployment's security.tls.ca)")
	fs.StringVar(&f.Cert, "tls-cert", "", "present this client certificate `FILE` (for deployments with client-auth; default: the deployment's security.tls.client-cert)")
	fs.StringVar(&f.Key, "tls-key", "", "the client certificate's key `FILE` (default: the deployment's security.tls.client-key)")
	fs.StringVar(&f.TokenFile, "token-file", "", "present the token in this `FILE` (default: the deployment's security.token-file)")
	return f
}
