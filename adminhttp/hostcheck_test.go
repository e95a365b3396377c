package adminhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"umstore/placement"
)

// A request whose Host is not a name of the admin server is refused with
// 421, so a page whose name was rebound to this address (DNS rebinding)
// cannot read the answers; IP addresses, localhost, the deployment's host
// addresses and names given by --admin-allowed-host are answered. Before,
// every Host was answered.
func TestAdminRefusesForeignHost(t *testing.T) {
	d := placement.Dev("127.0.0.1", 30000)
	d.Hosts[1].Address = "store-b.internal"
	cases := []struct {
		name    string
		allowed []string
		host    string
		want    int
	}{
		{"the address listened on", nil, "", http.StatusOK}, // the test server's own 127.0.0.1:port
		{"localhost with a port", nil, "localhost:9100", http.StatusOK},
		{"LOCALHOST.", nil, "LOCALHOST.", http.StatusOK},
		{"an IPv6 literal", nil, "[::1]:9100", http.StatusOK},
		{"another IP literal", nil, "10.1.2.3", http.StatusOK},
		{"a deployment host's address", nil, "store-b.internal:9100", http.StatusOK},
		{"a rebound name", nil, "evil.example", http.StatusMisdirectedRequest},
		{"a rebound name with a port", nil, "evil.example:9100", http.StatusMisdirectedRequest},
		{"a name under localhost's look-alike", nil, "localhost.evil.example", http.StatusMisdirectedRequest},
		{"a configured proxy name", []string{"admin.example.com"}, "Admin.Example.com:443", http.StatusOK},
		{"another name with one configured", []string{"admin.example.com"}, "evil.example", http.StatusMisdirectedRequest},
		{"the check turned off", []string{"*"}, "evil.example", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newServer(d, nil, Options{AllowedHosts: tc.allowed})
			a.reporter.remote = silent{}
			srv := httptest.NewServer(a.Handler)
			defer srv.Close()
			for _, path := range []string{"/v1/status", "/v1/deployment", "/"} {
				req, err := http.NewRequest("GET", srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.host != "" {
					req.Host = tc.host
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Fatalf("%s with Host %q: %d, want %d\n%s", path, tc.host, resp.StatusCode, tc.want, body)
				}
				if tc.want == http.StatusMisdirectedRequest && !strings.Contains(string(body), "--admin-allowed-host") {
					t.Errorf("the refusal does not say what to do: %s", body)
				}
			}
		})
	}
}
