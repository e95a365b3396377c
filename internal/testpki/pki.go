// Package testpki makes a throwaway certificate authority and a
// certificate for loopback addresses, for tests of TLS deployments.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are PEM files written by New.
type Files struct {
	CA, Cert, Key string
	// Other is a second CA with its own leaf certificate: trusted by nobody.
	OtherCert, OtherKey string
	// Client is a client certificate signed by CA: client use only, no
	// address, as a publisher's host would hold.
	ClientCert, ClientKey string
	// ElsewhereCert is signed by CA for server and client use, but valid
	// only for 192.0.2.1, an address no test host has: a store
	// certificate of some other host.
	ElsewhereCert, ElsewhereKey string
}

// New writes, into dir, a CA and a certificate (server and client use)
// valid for 127.0.0.1, 127.0.0.2, 127.0.0.3 and localhost, a client
// certificate and a certificate for another address from the same CA, and
// a certificate from an unrelated CA.
func New(t testing.TB, dir string) Files {
	t.Helper()
	caCert, caKey := newCA(t, "umstore test CA")
	otherCA, otherKey := newCA(t, "someone else's CA")
	f := Files{
		CA:        filepath.Join(dir, "ca.pem"),
		Cert:      filepath.Join(dir, "host.pem"),
		Key:       filepath.Join(dir, "host-key.pem"),
		OtherCert: filepath.Join(dir, "other.pem"),
		OtherKey:  filepath.Join(dir, "other-key.pem"),

		ClientCert:    filepath.Join(dir, "client.pem"),
		ClientKey:     filepath.Join(dir, "client-key.pem"),
		ElsewhereCert: filepath.Join(dir, "elsewhere.pem"),
		ElsewhereKey:  filepath.Join(dir, "elsewhere-key.pem"),
	}
	writePEM(t, f.CA, "CERTIFICATE", caCert.Raw)
	for _, l := range []struct {
		cert, key string
		ca        *x509.Certificate
		caKey     *ecdsa.PrivateKey
		tmpl      x509.Certificate
	}{
		{f.Cert, f.Key, caCert, caKey, hostTemplate()},
		{f.OtherCert, f.OtherKey, otherCA, otherKey, hostTemplate()},
		{f.ClientCert, f.ClientKey, caCert, caKey, x509.Certificate{
			Subject:     pkix.Name{CommonName: "umstore client"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{f.ElsewhereCert, f.ElsewhereKey, caCert, caKey, x509.Certificate{
			Subject:     pkix.Name{CommonName: "umstore host elsewhere"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.ParseIP("192.0.2.1")},
		}},
	} {
		der, key := newLeaf(t, l.ca, l.caKey, l.tmpl)
		writePEM(t, l.cert, "CERTIFICATE", der)
		writeKey(t, l.key, key)
	}
	return f
}

// hostTemplate is a store host's certificate: server and client use, valid
// for the loopback addresses the tests use.
func hostTemplate() x509.Certificate {
	return x509.Certificate{
		Subject:     pkix.Name{CommonName: "umstore host"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3")},
		DNSNames:    []string{"localhost"},
	}
}

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// newLeaf signs a leaf certificate with the subject, uses and addresses of
// tmpl.
func newLeaf(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "EC PRIVATE KEY", der)
}
