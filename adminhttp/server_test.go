package adminhttp

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"umstore/deploystatus"
	"umstore/placement"
	"umstore/wire"
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
	a := newServer(d, nil, Options{})
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

	for _, path := range []string{"/healthz", "/v1/status", "/metrics"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// The profiler is served only when asked for (--pprof): it tells whoever
// reaches the admin address much about the process.
func TestPprofOnlyWithTheFlag(t *testing.T) {
	d := placement.Dev("127.0.0.1", 30000)
	for _, tc := range []struct {
		opts Options
		want int
	}{
		{Options{}, http.StatusNotFound},
		{Options{Pprof: true}, http.StatusOK},
	} {
		a := newServer(d, nil, tc.opts)
		a.reporter.remote = silent{}
		srv := httptest.NewServer(a.Handler)
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap"} {
			if resp, _ := get(t, srv.URL+path); resp.StatusCode != tc.want {
				t.Errorf("pprof %v: %s: %d, want %d", tc.opts.Pprof, path, resp.StatusCode, tc.want)
			}
		}
		srv.Close()
	}
}

// A non-loopback admin address is warned about, saying what it exposes
// and what to do; loopback is not.
func TestExposureWarning(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		pprof bool
		want  []string // "" when no warning
	}{
		{"127.0.0.1:9100", true, nil},
		{"[::1]:9100", false, nil},
		{"127.0.0.2:9100", false, nil},
		{"0.0.0.0:9100", false, []string{"not loopback", "status of every store and source", "metrics", "127.0.0.1"}},
		{"[::]:9100", false, []string{"not loopback"}},
		{"10.0.0.1:9100", true, []string{"not loopback", "--pprof", "goroutine stacks"}},
	} {
		ta, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		got := exposure(ta, Options{Pprof: tc.pprof})
		if (got == "") != (tc.want == nil) {
			t.Errorf("%s: warning %q", tc.addr, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warning %q lacks %q", tc.addr, got, w)
			}
		}
		if !tc.pprof && strings.Contains(got, "pprof") {
			t.Errorf("%s: warning mentions pprof without it: %q", tc.addr, got)
		}
	}
}

// Names from the stores never reach the page as HTML: the script builds
// every element from text nodes and attributes and escapes control
// characters (shown), and /v1/deployment's JSON escapes "<", ">" and
// control characters.
func TestStatusPageShowsNamesAsText(t *testing.T) {
	js, err := webFiles.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser", "createContextualFragment", "srcdoc"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s, which parses text as HTML or code", sink)
		}
	}
	for _, use := range []string{`el("td", {"class": "src"}, shown(s.name))`, `"data-source": shown(s.name)`, `el("td", {"class": "src"}, shown(rc.name))`} {
		if !strings.Contains(string(js), use) {
			t.Errorf("app.js does not render source names through shown: lacks %s", use)
		}
	}

	d := placement.Dev("127.0.0.1", 30000)
	a := newServer(d, nil, Options{})
	evil := "<script>alert(1)</script>\x1b[2J\u202e"
	a.reporter.remote = fixedRound{deploystatus.Round{
		Stores:  map[string]deploystatus.ProbeResult{"G1S1": {Reply: &wire.ProbeReply{Store: "G1S1", Group: 1, State: "Leader", HasState: true}}},
		Sources: map[int]deploystatus.LeaderSources{1: {From: "G1S1", Sources: []wire.SourceState{{Name: evil, HighSeq: 3}}}},
	}}
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	resp, body := get(t, srv.URL+"/v1/deployment")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("/v1/deployment: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// (A format character such as U+202E may stay raw in JSON: the page
	// escapes it with shown.)
	if strings.Contains(body, "<script>") || strings.ContainsAny(body, "\x1b") {
		t.Errorf("/v1/deployment carries the name unescaped:\n%s", body)
	}
	var v deploystatus.View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Groups) == 0 || len(v.Groups[0].Sources) != 1 || v.Groups[0].Sources[0].Name != evil {
		t.Errorf("the name does not survive the round trip: %+v", v.Groups)
	}
}

// fixedRound is a round of probes with fixed answers.
type fixedRound struct{ r deploystatus.Round }

func (f fixedRound) Round() deploystatus.Round { return f.r }
