package adminhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"umstore/deploystatus"
	"umstore/placement"
)

// silent is a round of probes in which no store answers.
type silent struct{}

func (silent) Round() deploystatus.Round { return deploystatus.Round{} }

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// The admin server serves the embedded page, its assets and
// /v1/deployment, and keeps its other endpoints.
func TestAdminServesStatusPage(t *testing.T) {
	d := placement.Dev("127.0.0.1", 30000)
	d.Hosts[0].Address, d.Hosts[1].Address = "127.0.0.2", "127.0.0.3"
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	a := newServer(d, nil)
	a.reporter.remote = silent{} // no store answers
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()

	resp, body := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `src="/web/app.js"`) || !strings.Contains(body, `href="/web/style.css"`) {
		t.Fatalf("/: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("/ has no restrictive content security policy: %q", csp)
	}
	for path, ctype := range map[string]string{"/web/app.js": "text/javascript", "/web/style.css": "text/css"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || len(body) < 100 {
			t.Errorf("%s: %d %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	for _, path := range []string{"/web/nope.js", "/web/", "/web/../server.go", "/nope"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}

	resp, body = get(t, srv.URL+"/v1/deployment")
	var v deploystatus.View
	if err := json.Unmarshal([]byte(body), &v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/v1/deployment: %d %v\n%s", resp.StatusCode, err, body)
	}
	if len(v.Stores) != 6 || len(v.Hosts) != 2 || len(v.Groups) != 2 || v.Analysis == nil || v.Publishing {
		t.Fatalf("/v1/deployment: %+v", v)
	}
	for _, s := range v.Stores {
		if s.State != "down" {
			t.Errorf("%s: %q, want down", s.Name, s.State)
		}
	}
	// The analysis keeps placement's JSON names.
	if !strings.Contains(body, `"host_losses"`) || !strings.Contains(body, `"survives_any_host_loss"`) {
		t.Errorf("/v1/deployment lacks the failure analysis:\n%s", body)
	}

	for _, path := range []string{"/healthz", "/v1/status", "/metrics", "/debug/pprof/"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}
