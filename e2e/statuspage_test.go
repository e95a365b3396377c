package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The status page in a real headless Chromium, against two `umstored run`
// processes: every store shows with its state and the leaders are marked;
// the page says so when the daemon stops answering; after host B is killed
// its stores show as down, group 2 has no leader and group 1 leads on A. A
// screenshot of the healthy page is checked, and saved as
// docs/status-page.png when UPDATE_SCREENSHOT=1 or when there is none yet.
func TestStatusPage(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	br := newBrowser(t)
	bin := binaries(t)
	dir := t.TempDir()
	base := basePortOn(t, "127.0.0.2", "127.0.0.3")
	deploy := filepath.Join(dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(base), "--out", deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	a := &host{t: t, bin: bin, name: "A", addr: "127.0.0.2", dataDir: filepath.Join(dir, "A"), admin: fmt.Sprintf("127.0.0.2:%d", base+2000), deploy: deploy}
	b := &host{t: t, bin: bin, name: "B", addr: "127.0.0.3", dataDir: filepath.Join(dir, "B"), admin: fmt.Sprintf("127.0.0.3:%d", base+2000), deploy: deploy}
	t.Cleanup(func() {
		a.stop()
		b.stop()
		if t.Failed() {
			t.Logf("host A log:\n%s", tail(a.stderr, 40))
			t.Logf("host B log:\n%s", tail(b.stderr, 40))
		}
	})
	a.start()
	b.start()
	waitFor(t, 60*time.Second, "all six stores are up", func() bool {
		g, _, _ := deploymentStatus(t, bin, deploy)
		return allUp(g)
	})
	publishJSON(t, bin, deploy, "orders", 2000)
	publishJSON(t, bin, deploy, "prices", 500)
	pageA := "http://" + a.admin + "/"

	// Healthy: six stores, leader or up, one marked leader per group, the
	// same leaders `umstored status` reports, and both sources listed.
	var dom string
	waitForPage(t, br, pageA, 45*time.Second, "the page shows all six stores up with one leader per group", func(p page) string {
		dom = p.dom
		groups, _, _ := deploymentStatus(t, bin, deploy)
		if len(groups) != 2 {
			return "umstored status lists no groups"
		}
		for _, g := range groups {
			for _, s := range g.Stores {
				ps, ok := p.stores[s.Name]
				want := "up"
				if s.Name == g.Leader {
					want = "leader"
				}
				switch {
				case !ok:
					return s.Name + " is not on the page"
				case ps["data-state"] != want || ps["data-leader"] != fmt.Sprint(want == "leader"):
					return fmt.Sprintf("%s shows %q (leader %s), umstored status says %q", s.Name, ps["data-state"], ps["data-leader"], want)
				case !strings.HasSuffix(ps["aria-label"], ", "+want):
					return fmt.Sprintf("%s has no text label for its state: %q", s.Name, ps["aria-label"])
				}
			}
			if got := p.groupLeader[fmt.Sprint(g.Index)]; got != g.Leader {
				return fmt.Sprintf("group %d: the page names leader %q, umstored status %q", g.Index, got, g.Leader)
			}
		}
		if len(p.stores) != 6 {
			return fmt.Sprintf("%d stores on the page, want 6", len(p.stores))
		}
		for _, g := range []string{"1", "2"} {
			for _, src := range []string{"orders", "prices"} {
				if !p.hasSource(g, src) {
					return "the sources table lacks " + src + " in group " + g
				}
			}
		}
		return p.expect(map[string]string{"connection": "ok", "publishing": "yes", "host A": "up", "host B": "up"})
	})
	if !strings.Contains(dom, "updated ") || !strings.Contains(dom, "Failure analysis") || !strings.Contains(dom, "keeps quorum") {
		t.Errorf("the page lacks the update time or the failure analysis:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "status-page.png")
	br.screenshot(pageA, shot)
	checkPNG(t, shot, 1280, 900)
	saveScreenshot(t, shot, filepath.Join("..", "docs", "status-page.png"))

	// The daemon stops answering: the page keeps the last state and says so.
	lost := stopAnsweringAfterOne(t, a.admin)
	waitForPage(t, br, lost, 30*time.Second, "the page shows that the connection is lost", func(p page) string {
		switch {
		case p.body["data-connection"] != "lost":
			return "data-connection is " + p.body["data-connection"]
		case !regexp.MustCompile(`<div id="banner" class="banner" role="alert">[^<]*<strong>⚠ Connection lost</strong>`).MatchString(p.dom):
			return "no visible connection-lost banner"
		case len(p.stores) != 6:
			return "the last known state is gone"
		}
		return ""
	})

	// Host B crashes: its stores are down, group 2 has lost its quorum (no
	// leader), group 1 keeps its quorum on host A.
	b.kill9()
	waitForPage(t, br, pageA, 45*time.Second, "the page shows host B down, group 2 without a leader and group 1 led on A", func(p page) string {
		for name, s := range p.stores {
			onB := s["data-host"] == "B"
			if onB != (s["data-state"] == "down") {
				return fmt.Sprintf("%s on host %s shows %q", name, s["data-host"], s["data-state"])
			}
			if s["data-group"] == "2" && s["data-leader"] == "true" {
				return name + " is marked leader of group 2, which has no quorum"
			}
		}
		if len(p.stores) != 6 {
			return fmt.Sprintf("%d stores on the page, want 6", len(p.stores))
		}
		if l := p.groupLeader["2"]; l != "" {
			return "group 2 still has leader " + l
		}
		if l := p.groupLeader["1"]; l != "G1S1" && l != "G1S2" {
			return fmt.Sprintf("group 1's leader is %q, want G1S1 or G1S2", l)
		}
		if p.stores[p.groupLeader["1"]]["data-leader"] != "true" {
			return "group 1's leader is not marked"
		}
		if !regexp.MustCompile(`<tr data-loss="B" class="now">`).MatchString(p.dom) {
			return "the failure analysis does not point at host B's loss"
		}
		return p.expect(map[string]string{"connection": "ok", "publishing": "yes", "host A": "up", "host B": "down"})
	})
	down := filepath.Join(t.TempDir(), "status-page-host-b-down.png")
	br.screenshot(pageA, down)
	checkPNG(t, down, 1280, 900)
}

// `umstored dev` prints the status page's address, and the page shows both
// hosts as run by this daemon.
func TestStatusPageDev(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	br := newBrowser(t)
	bin := binaries(t)
	pageURL := startDevPage(t, bin, t.TempDir())
	waitForPage(t, br, pageURL, 45*time.Second, "the dev page shows six stores and two leaders", func(p page) string {
		leaders := 0
		for name, s := range p.stores {
			if s["data-local"] != "true" {
				return name + " is not shown as run by this daemon"
			}
			switch s["data-state"] {
			case "leader":
				leaders++
			case "up":
			default:
				return fmt.Sprintf("%s shows %q", name, s["data-state"])
			}
		}
		if len(p.stores) != 6 || leaders != 2 {
			return fmt.Sprintf("%d stores, %d leaders; want 6 and 2", len(p.stores), leaders)
		}
		return p.expect(map[string]string{"connection": "ok", "publishing": "yes", "host A": "up", "host B": "up"})
	})
}

// browser runs a headless Chromium, one process per page load.
type browser struct {
	t    *testing.T
	path string
	runs int
}

// newBrowser finds Chromium. Without it the test is skipped, unless CI is
// set: CI must install it (Debian's chromium package).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return &browser{t: t, path: p}
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium, chromium-browser or google-chrome in PATH; CI must install one (apt-get install chromium)")
	}
	t.Skip("the status page test needs a headless Chromium: no chromium, chromium-browser or google-chrome in PATH (on Debian: apt-get install chromium)")
	return nil
}

// run loads url with a fresh profile, letting the page's scripts run for
// 3 s of virtual time, and returns what Chromium printed.
func (b *browser) run(url string, extra ...string) string {
	b.t.Helper()
	b.runs++
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + filepath.Join(b.t.TempDir(), fmt.Sprintf("profile-%d", b.runs)),
		"--virtual-time-budget=3000",
	}
	cmd := exec.CommandContext(ctx, b.path, append(append(args, extra...), url)...)
	// Chromium starts helper processes: stop them all if it hangs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("chromium %s: %v\n%s", url, err, tailString(stderr.String(), 20))
	}
	// The page's console: a script error or a blocked resource is a bug.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") && (strings.Contains(line, "Uncaught") || strings.Contains(line, "Content Security Policy")) {
			b.t.Errorf("the page at %s logged: %s", url, line)
		}
	}
	return stdout.String()
}

func (b *browser) dumpDOM(url string) string { return b.run(url, "--dump-dom") }

func (b *browser) screenshot(url, file string) {
	b.t.Helper()
	b.run(url, "--screenshot="+file, "--window-size=1280,900")
}

// page is what a DOM dump says: the attributes of each element that
// carries data-store, by store name, and the page-level facts.
type page struct {
	dom         string
	stores      map[string]map[string]string
	groupLeader map[string]string // group index -> leader named by the group summary
	hosts       map[string]string // host name -> data-host-state
	body        map[string]string
	publishing  string
}

var (
	openTag   = regexp.MustCompile(`<[a-z][a-z0-9]*\s[^>]*>`)
	attribute = regexp.MustCompile(`([a-z][a-z-]*)="([^"]*)"`)
)

func parsePage(dom string) page {
	p := page{dom: dom, stores: map[string]map[string]string{}, groupLeader: map[string]string{}, hosts: map[string]string{}, body: map[string]string{}}
	for _, tag := range openTag.FindAllString(dom, -1) {
		attrs := map[string]string{}
		for _, m := range attribute.FindAllStringSubmatch(tag, -1) {
			if _, seen := attrs[m[1]]; !seen {
				attrs[m[1]] = m[2]
			}
		}
		switch {
		case strings.HasPrefix(tag, "<body"):
			p.body = attrs
		case attrs["data-store"] != "":
			p.stores[attrs["data-store"]] = attrs
		case attrs["data-host-state"] != "":
			p.hosts[attrs["data-host"]] = attrs["data-host-state"]
		case attrs["id"] == "summary":
			p.publishing = attrs["data-publishing"]
		}
		if v, ok := attrs["data-group-leader"]; ok {
			p.groupLeader[attrs["data-group"]] = v
		}
	}
	return p
}

// hasSource reports whether the sources table has a row for source in group.
func (p page) hasSource(group, source string) bool {
	return strings.Contains(p.dom, fmt.Sprintf(`<tr data-group="%s" data-source="%s">`, group, source))
}

// expect checks the connection, the publishing verdict and host states;
// it returns what differs, or "".
func (p page) expect(want map[string]string) string {
	for k, v := range want {
		var got string
		switch {
		case k == "connection":
			got = p.body["data-connection"]
		case k == "publishing":
			got = p.publishing
		case strings.HasPrefix(k, "host "):
			got = p.hosts[strings.TrimPrefix(k, "host ")]
		}
		if got != v {
			return fmt.Sprintf("%s is %q, want %q", k, got, v)
		}
	}
	return ""
}

// waitForPage loads url until check finds nothing wrong, or fails naming
// what was last wrong.
func waitForPage(t *testing.T, br *browser, url string, timeout time.Duration, what string, check func(page) string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dom := br.dumpDOM(url)
		problem := check(parsePage(dom))
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s: %s\nDOM:\n%s", timeout, what, problem, dom)
		}
		time.Sleep(time.Second)
	}
}

// stopAnsweringAfterOne serves the admin address through a proxy that,
// after each load of the page, answers /v1/deployment once and then drops
// every request for it, as a daemon that died would. It returns the page's
// address through the proxy.
func stopAnsweringAfterOne(t *testing.T, admin string) string {
	t.Helper()
	target, err := url.Parse("http://" + admin)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var answered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			answered.Store(0)
		}
		if r.URL.Path == "/v1/deployment" && answered.Add(1) > 1 {
			panic(http.ErrAbortHandler) // close the connection without an answer
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// checkPNG checks that file is a PNG of the given size.
func checkPNG(t *testing.T, file string, width, height int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", file, err)
	}
	if fi, _ := f.Stat(); cfg.Width != width || cfg.Height != height || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %dx%d, %d bytes; want %dx%d with something drawn", file, cfg.Width, cfg.Height, fi.Size(), width, height)
	}
}

// saveScreenshot copies the screenshot to dst when UPDATE_SCREENSHOT=1 or
// dst does not exist yet, so that ordinary runs leave the tree clean.
func saveScreenshot(t *testing.T, src, dst string) {
	t.Helper()
	_, err := os.Stat(dst)
	if os.Getenv("UPDATE_SCREENSHOT") != "1" && !errors.Is(err, os.ErrNotExist) {
		return
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatalf("save the screenshot: %v", err)
	}
	t.Logf("wrote %s", dst)
}

// startDevPage runs `umstored dev` and returns the status page address it
// prints once ready.
func startDevPage(t *testing.T, bin, dataDir string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "umstored"), "dev", "--data-dir", dataDir, "--base-port", fmt.Sprint(freeBasePort(t)), "--admin-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("umstored dev stderr:\n%s", tail(stderr, 40))
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout) // read to the end so dev never blocks on stdout
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "status page:"); ok {
				found <- strings.TrimSpace(rest)
			}
		}
	}()
	select {
	case u := <-found:
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("umstored dev printed no status page address: %q", u)
		}
		return u
	case <-done:
		t.Fatalf("umstored dev exited:\n%s", stderr.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("umstored dev did not print its status page; stderr:\n%s", stderr.String())
	}
	return ""
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
