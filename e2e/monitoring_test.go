package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The monitoring shipped in deploy/ (docs/operations.md, "Monitoring"): the
// Prometheus alerting rules and the Grafana dashboard.
const (
	alertsFile     = "../deploy/prometheus/alerts.yml"
	alertTestsFile = "../deploy/prometheus/alerts_test.yml"
	dashboardFile  = "../deploy/grafana/umstore.json"
)

// promtool returns the path of Prometheus's rule checker, or skips the test
// saying how to get it.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed: install Debian's prometheus package (apt-get install prometheus; .ci/run does) to check deploy/prometheus")
	}
	return path
}

// runPromtool runs promtool with args in dir and fails the test with its
// output when it does not succeed.
func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ruleFile is the shape of a Prometheus rule file, as much as these tests
// read of it.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

// TestAlertRulesLoad: Prometheus's own checker accepts the rule file.
func TestAlertRulesLoad(t *testing.T) {
	runPromtool(t, ".", "check", "rules", alertsFile)
}

// TestAlertRulesFireWhenTheyShould runs the unit tests of the alerts'
// expressions (alerts_test.yml: the leaderless group after its 30 s and not
// before, publishing not possible, a failed store, catch-up stalled, a
// store falling behind, a disk filling, clock skew). promtool compares
// annotations as well, so they run against a copy of the rules without
// them; TestAlertRulesSayWhatToDo checks the annotations.
func TestAlertRulesFireWhenTheyShould(t *testing.T) {
	promtool(t)
	rf := readRules(t)
	for i := range rf.Groups {
		for j := range rf.Groups[i].Rules {
			rf.Groups[i].Rules[j].Annotations = nil
		}
	}
	dir := t.TempDir()
	stripped, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), stripped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "test", "rules", "alerts_test.yml")
}

// TestAlertRulesSayWhatToDo: every rule is an alert, named once, with a
// severity the receivers route on, a summary, and a description that says
// what to do and where the docs say more.
func TestAlertRulesSayWhatToDo(t *testing.T) {
	rf := readRules(t)
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			switch {
			case name == "":
				t.Errorf("group %s: a rule that is not an alert (record %q)", g.Name, r.Record)
				continue
			case seen[name]:
				t.Errorf("alert %s defined twice", name)
			}
			seen[name] = true
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", name, s)
			}
			if strings.TrimSpace(r.Annotations["summary"]) == "" {
				t.Errorf("alert %s has no summary", name)
			}
			desc := r.Annotations["description"]
			if len(desc) < 100 || !strings.Contains(desc, "docs/") {
				t.Errorf("alert %s: its description should say what to do and name the docs (docs/operations.md#...): %q", name, desc)
			}
			if !strings.HasPrefix(r.Annotations["runbook"], "docs/operations.md#") {
				t.Errorf("alert %s: runbook %q, want a docs/operations.md section", name, r.Annotations["runbook"])
			}
		}
	}
	for _, want := range []string{"UmstoreGroupLeaderless", "UmstorePublishingNotPossible", "UmstoreStoreFailed", "UmstoreCatchUpStalled", "UmstoreDamagedMessagesWithoutCopy", "UmstoreDiskFilling", "UmstoreClockSkew"} {
		if !seen[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// dashboard is the shape of a Grafana dashboard, as much as these tests
// read of it.
type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	return d
}

// dashboardExprs returns every query of the dashboard, by panel title.
func dashboardExprs(t *testing.T, d dashboard) map[string][]string {
	t.Helper()
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard title %q, uid %q: want both", d.Title, d.UID)
	}
	ids := map[int]bool{}
	exprs := map[string][]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d (%q) needs a title and a query", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: query %s is empty", p.Title, tg.RefID)
			}
			exprs[p.Title] = append(exprs[p.Title], tg.Expr)
		}
	}
	return exprs
}

// TestDashboardQueriesParse: the dashboard is valid JSON, its panels have
// titles, queries and unique ids, and Prometheus parses every query (with
// the dashboard's variables set to match all).
func TestDashboardQueriesParse(t *testing.T) {
	exprs := dashboardExprs(t, readDashboard(t))
	promtool(t)
	var rf ruleFile
	rf.Groups = make([]struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}, 1)
	rf.Groups[0].Name = "dashboard"
	titles := sortedKeys(exprs)
	for i, title := range titles {
		for j, e := range exprs[title] {
			e = strings.NewReplacer("$job", ".*", "$group", ".*").Replace(e)
			rf.Groups[0].Rules = append(rf.Groups[0].Rules, rule{Record: fmt.Sprintf("dashboard:panel%d:query%d", i, j), Expr: e})
		}
	}
	data, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "dashboard.yml")
}

// metricName finds the umstored metric names in a query: the umstore_ ones
// and the Go and process collectors'. Those of other exporters (the node
// exporter's node_, Prometheus's up) are not umstored's to check.
var metricName = regexp.MustCompile(`\b(?:umstore|process|go)_[a-z0-9_]+\b`)

// TestMonitoringQueriesLiveMetrics starts `umstored dev`, has a named
// receiver consume a few messages (receiver metrics exist only then), and
// checks that every umstored metric the dashboard and the alerting rules
// query is on its /metrics: a renamed metric would leave a panel empty and
// an alert silent.
func TestMonitoringQueriesLiveMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts umstored dev")
	}
	uses := map[string][]string{} // metric name -> where it is queried
	for title, es := range dashboardExprs(t, readDashboard(t)) {
		for _, e := range es {
			for _, m := range metricName.FindAllString(e, -1) {
				uses[m] = append(uses[m], "dashboard panel "+title)
			}
		}
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				uses[m] = append(uses[m], "alert "+r.Alert)
			}
		}
	}
	if len(uses) < 20 {
		t.Fatalf("found only %d metric names in the dashboard and rules: %v", len(uses), sortedKeys(uses))
	}

	bin := binaries(t)
	dataDir := t.TempDir()
	page := startDevPage(t, bin, dataDir)
	deploy := filepath.Join(dataDir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "watched", "--count", "5"); code != 0 {
		t.Fatalf("umpub: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "watched", "--name", "oncall", "--to", "5"); code != 0 {
		t.Fatalf("umrcv: exit %d\n%s\n%s", code, out, errOut)
	}

	resp, err := http.Get(strings.TrimSuffix(page, "/") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", resp.Status, err)
	}
	live := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		live[name] = true
	}
	for _, m := range sortedKeys(uses) {
		if !live[m] {
			t.Errorf("%s is not on umstored dev's /metrics; queried by %s", m, strings.Join(uses[m], ", "))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
