package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
	"umstore/storegroup"
)

// deploymentHead is a valid deployment without a security section.
const deploymentHead = `version: 1
name: ids
hosts:
  - {name: A, address: 127.0.0.2}
  - {name: B, address: 127.0.0.3}
groups:
  - index: 1
    stores:
      - {name: A1, host: A, raft-port: 7011, client-port: 8011}
      - {name: A2, host: A, raft-port: 7012, client-port: 8012}
      - {name: B1, host: B, raft-port: 7013, client-port: 8013}
`

// TestClientIdentitiesConfig reads security.clients as the stores do:
// bad patterns, a token file that is not a regular file, two identities
// with one token and the other mistakes are each a clear error naming
// the key; a good list gives the stores their identities, and no list
// none (the shared token alone, as before).
func TestClientIdentitiesConfig(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"token": "deployment\n", "billing.token": "billing\n", "audit.token": "audit\n", "copy.token": "billing\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tokendir"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		security string
		want     string // "" accepted
	}{
		{"no clients", "security:\n  token-file: token\n", ""},
		{"two identities", `security:
  token-file: token
  clients:
    - {name: billing, token-file: billing.token, publish: [orders.>], receive: [orders.eu], receivers: [billing.*]}
    - {name: audit, token-file: audit.token, receive: [">"]}
`, ""},
		{"a bad publish pattern", `security:
  token-file: token
  clients:
    - {name: billing, token-file: billing.token, publish: [orders..eu]}
`, `security.clients[0].publish: pattern "orders..eu" has an empty token`},
		{"a bad receivers pattern", `security:
  token-file: token
  clients:
    - {name: billing, token-file: billing.token, receivers: ["app*"]}
`, `security.clients[0].receivers: pattern "app*" has token "app*" mixing * or >`},
		{"a token file that is a directory", `security:
  token-file: token
  clients:
    - {name: billing, token-file: tokendir}
`, "tokendir is a directory, not a regular file"},
		{"two identities with one token", `security:
  token-file: token
  clients:
    - {name: billing, token-file: billing.token}
    - {name: copy, token-file: copy.token}
`, `client identities "billing" and "copy" have the same token`},
		{"an identity with the deployment's token", `security:
  token-file: token
  clients:
    - {name: billing, token-file: token}
`, `client identity "billing" has the deployment's own token`},
		{"clients without the deployment's token", `security:
  clients:
    - {name: billing, token-file: billing.token}
`, "security.clients: needs security.token-file"},
		{"neither token nor TLS name", `security:
  token-file: token
  clients:
    - {name: billing, publish: [">"]}
`, "security.clients[0]: needs exactly one of token-file"},
		{"a TLS name without client certificates", `security:
  token-file: token
  clients:
    - {name: billing, tls-name: billing.example}
`, "security.clients[0].tls-name: needs security.tls with client-auth: true"},
		{"two identities with one name", `security:
  token-file: token
  clients:
    - {name: billing, token-file: billing.token}
    - {name: billing, token-file: audit.token}
`, `security.clients[1].name: "billing" names another identity too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := placement.Parse([]byte(deploymentHead+tc.security), filepath.Join(dir, "deployment.yaml"))
			if err == nil {
				var got storegroup.Security
				got, err = StoreSecurity(d)
				switch {
				case err != nil:
				case len(d.Security.Clients) == 0 && got.Clients != nil:
					t.Fatal("identities without a clients list")
				case len(d.Security.Clients) > 0 && got.Clients.ByToken("billing") == nil:
					t.Fatal("the billing token names no identity")
				}
			}
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
