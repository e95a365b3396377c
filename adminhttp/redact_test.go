package adminhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"umstore/placement"
	"umstore/storegroup"
)

// The admin server's answers name no file system path: a store's error,
// refusal or repair error is shown with its data directory named by the
// store, and any other path by its last element. Before, /v1/status and
// /v1/deployment showed the errors as the stores wrote them.
func TestAdminAnswersNameNoPaths(t *testing.T) {
	d := placement.Dev("127.0.0.1", 30000)
	a := newServer(d, nil, Options{})
	a.reporter.remote = silent{}
	a.reporter.localHosts = []string{"A"}
	a.reporter.redact = redactor{dirs: []namedDir{{"/srv/umstore/A/g1s1", "[data of g1s1]"}}}
	secret := "/srv/umstore"
	a.reporter.local = func() []storegroup.Status {
		st := storegroup.Status{Name: "G1S1", Group: 1, State: "failed",
			Error:       "store g1s1 stopped: open /srv/umstore/A/g1s1/repo.db: permission denied; moved to \"/srv/umstore/A/g1s1.damaged-1\"",
			MoveRefused: "g1s2 refuses: lock file=/srv/umstore/A/g1s1/LOCK held",
		}
		st.Repair.LastError = "read /home/op/certs/ca.pem: no such file"
		return []storegroup.Status{st}
	}
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	for _, path := range []string{"/v1/status", "/v1/deployment"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, leak := range []string{secret, "/home/op"} {
			if strings.Contains(string(body), leak) {
				t.Errorf("%s shows the path %s:\n%s", path, leak, body)
			}
		}
		if !strings.Contains(string(body), "open [data of g1s1]/repo.db: permission denied") {
			t.Errorf("%s does not name the file by its store:\n%s", path, body)
		}
	}
}

// The redactor's rule, case by case.
func TestRedactText(t *testing.T) {
	r := redactor{dirs: []namedDir{{"/data/B/g2s3", "[data of g2s3]"}, {"/data/B", "[data of B]"}}}
	for _, tc := range []struct{ in, want string }{
		{"no path at all", "no path at all"},
		{"open /data/B/g2s3/wal/00001.wal: bad", "open [data of g2s3]/wal/00001.wal: bad"},
		{"/data/B/g2s3", "[data of g2s3]"},
		{"dir=/data/B/other/x", "dir=[data of B]/other/x"},
		{`"/etc/umstore/token" is a FIFO`, `"[…]/token" is a FIFO`},
		{"(/var/tmp/x.pem)", "([…]/x.pem)"},
		{"at 127.0.0.1:14001 msgs/s 3", "at 127.0.0.1:14001 msgs/s 3"},
		{"peer g1s2 at store-b:14002 refused", "peer g1s2 at store-b:14002 refused"},
	} {
		if got := r.text(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
