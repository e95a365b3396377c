package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A wiped host's restore shows its progress, and every store says how it
// last stopped: host A is killed and comes back empty; its daemon logs,
// for each store caught up, the entries and bytes it received, and its
// page's view shows a catching-up store's progress while there is one.
// Host B is killed and restarted with its state: `umstored status` and
// host A's page say B's stores stopped dirty and A's are new.
func TestRestoreProgressAndLastStop(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	a, b := d.a, d.b
	d.startAll(t)
	publishJSON(t, bin, d.deploy, "restore", 3000)

	a.kill9()
	if err := os.RemoveAll(a.dataDir); err != nil {
		t.Fatal(err)
	}
	a.start()
	type pageStore struct {
		Name          string `json:"name"`
		Host          string `json:"host"`
		CatchingUp    bool   `json:"catching_up"`
		CatchUpTarget uint64 `json:"catch_up_target"`
		LastStop      string `json:"last_stop"`
	}
	pageStores := func() []pageStore {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + a.admin + "/v1/deployment")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var v struct {
			Stores []pageStore `json:"stores"`
		}
		if json.NewDecoder(resp.Body).Decode(&v) != nil {
			return nil
		}
		return v.Stores
	}
	var catching []pageStore
	waitFor(t, 90*time.Second, "host A's wiped stores caught up and all six are up", func() bool {
		for _, s := range pageStores() {
			if s.CatchingUp {
				catching = append(catching, s)
			}
		}
		g, _, _ := deploymentStatus(t, bin, d.deploy)
		return allUp(g)
	})
	t.Logf("page samples of a store catching up: %d", len(catching))
	for _, s := range catching {
		if s.CatchUpTarget == 0 {
			t.Errorf("the page shows %s catching up without its target: %+v", s.Name, s)
		}
	}
	caught := regexp.MustCompile(`msg="caught up with the group; voting normally".* store=(\S+) .*entries=(\d+) bytes=(\d+)`)
	seen := map[string]bool{}
	for _, line := range strings.Split(a.stderr.String(), "\n") {
		m := caught.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		entries, _ := strconv.Atoi(m[2])
		bytes, _ := strconv.Atoi(m[3])
		if entries == 0 && bytes == 0 {
			t.Errorf("%s caught up having received nothing: %s", m[1], line)
		}
		seen[m[1]] = true
	}
	if len(seen) != 3 {
		t.Fatalf("host A's log names the entries and bytes caught up for %d stores (%v), want 3:\n%s", len(seen), seen, tail(a.stderr, 40))
	}

	b.kill9()
	b.start()
	d.waitAllUp(t, "host B is back with its state")
	out, errOut, code := runTool(t, bin, "umstored", "status", "--deployment", d.deploy)
	if code != 0 || !strings.Contains(out, "LAST STOP") {
		t.Fatalf("umstored status: exit %d\n%s%s", code, out, errOut)
	}
	col, found := -1, false // the LAST STOP column of the stores' table, found by its header
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "GROUP" { // the stores' table, or the sources' after it
			col = slices.Index(f, "LAST")
			found = found || col >= 0
			continue
		}
		if col < 0 || len(f) <= col || !strings.HasPrefix(f[1], "G") {
			continue
		}
		want := map[string]string{"A": "new", "B": "dirty"}[f[2]]
		if f[col] != want {
			t.Errorf("umstored status: %s on host %s stopped %q, want %q\n%s", f[1], f[2], f[col], want, out)
		}
	}
	if !found {
		t.Fatalf("umstored status has no LAST STOP column:\n%s", out)
	}
	// The page probes the other host's stores in the background: its view
	// of B's restarted stores comes within a few probes.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		stores := pageStores()
		var wrong []string
		for _, s := range stores {
			if want := map[string]string{"A": "new", "B": "dirty"}[s.Host]; s.LastStop != want {
				wrong = append(wrong, s.Name+" on host "+s.Host+" stopped "+strconv.Quote(s.LastStop)+", want "+strconv.Quote(want))
			}
		}
		if len(stores) == 6 && len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host A's page after 15 s: %d stores, %s", len(stores), strings.Join(wrong, "; "))
		}
	}
}
