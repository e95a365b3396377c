package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"umstore/internal/testpki"
	"umstore/placement"
)

// The files a client or daemon reads for its token and TLS are checked
// before they are read: a device, a FIFO, a directory, a file over the
// bound, a token of several lines are each a clear error naming the file,
// at once. Before, /dev/zero was read until the process ran out of memory,
// a FIFO hung the command, and a private key was sent as the token.
func TestSecurityFilesAreChecked(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, t.TempDir())
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := write("token", "s3cret\n")
	multi := write("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
	bigToken := write("big-token", strings.Repeat("x", 4097))
	bigPEM := write("big.pem", strings.Repeat("x", 1<<20+1))

	client := func(f SecurityFlags) error { _, _, err := ClientSecurity(nil, f); return err }
	store := func(sec placement.Security) func() error {
		return func() error { _, err := StoreSecurity(&placement.Deployment{Security: &sec}); return err }
	}
	tlsWith := func(ca, cert, key string) placement.Security {
		return placement.Security{TLS: &placement.TLS{CA: ca, Cert: cert, Key: key}}
	}
	cases := []struct {
		name string
		run  func() error
		want string // "" means accepted
	}{
		{"a good token", func() error { return client(SecurityFlags{TokenFile: good}) }, ""},
		{"token /dev/zero", func() error { return client(SecurityFlags{TokenFile: "/dev/zero"}) }, "/dev/zero is a character device, not a regular file"},
		{"token FIFO", func() error { return client(SecurityFlags{TokenFile: fifo}) }, fifo + " is a FIFO, not a regular file"},
		{"token directory", func() error { return client(SecurityFlags{TokenFile: dir}) }, dir + " is a directory, not a regular file"},
		{"token over 4 KiB", func() error { return client(SecurityFlags{TokenFile: bigToken}) }, bigToken + " is larger than 4096 bytes"},
		{"token of several lines", func() error { return client(SecurityFlags{TokenFile: multi}) }, multi + " holds several lines"},
		{"store token /dev/zero", store(placement.Security{TokenFile: "/dev/zero"}), "/dev/zero is a character device"},
		{"operator token FIFO", func() error { _, err := OperatorToken(nil, fifo); return err }, "operator token file (security.operator-token-file or --operator-token-file) " + fifo + " is a FIFO"},
		{"member secret /dev/zero", store(placement.Security{MemberSecretFile: "/dev/zero"}), "/dev/zero is a character device"},
		{"good TLS files", store(tlsWith(pki.CA, pki.Cert, pki.Key)), ""},
		{"CA /dev/zero", func() error { return client(SecurityFlags{CA: "/dev/zero"}) }, "CA certificate (security.tls.ca or --tls-ca) /dev/zero is a character device"},
		{"CA FIFO", store(tlsWith(fifo, pki.Cert, pki.Key)), fifo + " is a FIFO"},
		{"CA over 1 MiB", store(tlsWith(bigPEM, pki.Cert, pki.Key)), bigPEM + " is larger than 1048576 bytes"},
		{"store certificate directory", store(tlsWith(pki.CA, dir, pki.Key)), dir + " is a directory"},
		{"store key /dev/zero", store(tlsWith(pki.CA, pki.Cert, "/dev/zero")), "store key (security.tls.key) /dev/zero is a character device"},
		{"client key FIFO", func() error { return client(SecurityFlags{CA: pki.CA, Cert: pki.ClientCert, Key: fifo}) }, fifo + " is a FIFO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := within(t, 500*time.Millisecond, tc.run)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
		})
	}
}

// within runs f and returns its error, ending the whole test binary if f
// takes longer than d: a read of /dev/zero that never ends would otherwise
// go on eating memory after the test failed.
func within(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		panic(fmt.Sprintf("%s: still reading after %v", t.Name(), d))
	}
}
