package adminhttp

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"umstore/deploystatus"
	"umstore/placement"
	"umstore/wire"
)

// In a real browser, a source named like markup or with a terminal escape
// is shown as text, its control characters as \u{...} escapes, and runs
// nothing. Skipped without Chromium (e2e/statuspage_test.go says how to
// install it).
func TestStatusPageRendersHostileNamesAsText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	var chromium string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no chromium, chromium-browser or google-chrome in PATH")
	}
	a := newServer(placement.Dev("127.0.0.1", 30000), nil, Options{})
	a.reporter.remote = fixedRound{deploystatus.Round{
		Stores: map[string]deploystatus.ProbeResult{"G1S1": {Reply: &wire.ProbeReply{Store: "G1S1", Group: 1, State: "Leader", HasState: true}}},
		Sources: map[int]deploystatus.LeaderSources{1: {From: "G1S1", Sources: []wire.SourceState{
			{Name: `<img src=x onerror="document.title='owned'"><script>document.title='owned'</script>`, HighSeq: 3},
			{Name: "evil\x1b[2J\u202eright-to-left", HighSeq: 4},
		}}},
	}}
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--virtual-time-budget=3000", "--dump-dom", srv.URL+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	for _, want := range []string{
		`<td class="src">&lt;img src=x onerror="document.title='owned'"&gt;&lt;script&gt;document.title='owned'&lt;/script&gt;</td>`,
		`<td class="src">evil\u{1b}[2J\u{202e}right-to-left</td>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s:\n%s", want, dom)
		}
	}
	if strings.Contains(dom, "<title>owned") || strings.Contains(dom, "<img src=\"x\"") || strings.ContainsAny(dom, "\x1b\u202e") {
		t.Errorf("a name was taken as markup or passed raw:\n%s", dom)
	}
}
