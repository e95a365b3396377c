package placement

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestRestartScenarios drives RestartPlan from the files in the top-level
// testdata/restart. Directives:
//
//	deployment hosts=A,B groups=2 stores-per-group=3 [move=(...)] [idle-hosts=(...)]
//
// sets the deployment for the directives after it (laid out as the planner
// does; see scenario_test.go for the arguments) and prints its layout.
//
//	restart host=A [state=(G1S1,...)] [empty=(G1S3,...)]
//
// plans the restart of host A's stores. state lists the stores that kept
// their state, empty those known to be empty (or down); a store of host A
// listed in neither is empty, a store of another host listed in neither is
// running with its state. It prints every step, then the plan as the daemon
// logs it, or the refusal. Whatever the expected output says, every plan is
// also checked against the rules of a staged restart (checkRestartRules).
//
// Rewrite the expected outputs with
// `go test ./placement -run Scenarios -rewrite` and review the diff.
func TestRestartScenarios(t *testing.T) {
	datadriven.Walk(t, "../testdata/restart", func(t *testing.T, path string) {
		var dep *Deployment
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "deployment":
				req := scenarioRequest(t, d).withDefaults()
				dep = layout(req.Name, req.Hosts, req.Groups, req.StoresPerGroup, req.BasePort)
				adjust(t, d, dep)
				if err := dep.Validate(); err != nil {
					d.Fatalf(t, "invalid deployment: %v", err)
				}
				return RenderLayout(dep)
			case "restart":
				if dep == nil {
					d.Fatalf(t, "restart before any deployment directive")
				}
				return runRestart(t, d, dep)
			default:
				d.Fatalf(t, "unknown command %q (want deployment or restart)", d.Cmd)
				return ""
			}
		})
	})
}

func runRestart(t *testing.T, d *datadriven.TestData, dep *Deployment) string {
	var host string
	d.ScanArgs(t, "host", &host)
	var hasState map[string]bool
	if d.HasArg("state") || d.HasArg("empty") {
		hasState = map[string]bool{}
	}
	for _, s := range scenarioList(d, "state") {
		hasState[s] = true
	}
	for _, s := range scenarioList(d, "empty") {
		hasState[s] = false
	}
	plan, err := RestartPlan(dep, host, hasState)
	if err != nil {
		if plan != nil {
			t.Error("a refused restart must return no plan")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "refused (matches %s):\n", sentinelNames(err))
		for line := range strings.Lines(err.Error()) {
			b.WriteString("  " + line)
		}
		b.WriteString("\n")
		return b.String()
	}
	checkRestartRules(t, dep, host, hasState, plan)
	var b strings.Builder
	for _, s := range plan.Steps {
		state := "empty"
		if s.HasState {
			state = "with state"
		}
		wait := "at once"
		if s.WaitsFor != "" {
			wait = fmt.Sprintf("after %s is %s", s.WaitsFor, s.WaitsUntil)
		}
		fmt.Fprintf(&b, "step %d: %s (group %d, %s) %s; ready when %s", s.Number, s.Store, s.Group, state, wait, s.ReadyWhen)
		if len(s.CatchesUpFrom) > 0 {
			fmt.Fprintf(&b, "; catches up from %s", strings.Join(s.CatchesUpFrom, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString(plan.Render())
	return b.String()
}

// checkRestartRules holds the rules of a staged restart (SPEC §4 rule 4)
// against a plan, independently of the expected output: each store of the
// host starts exactly once, with the state it was said to have; stores with
// state come first, all together; an empty store starts only after every
// store it waits for, waits for the empty store of its group before it (or,
// for the first, for a running member with state when the group has none
// elsewhere), has a member with state to catch up from, and is the only
// empty store of its group in its phase (checkNoEmptyQuorum).
func checkRestartRules(t *testing.T, d *Deployment, host string, hasState map[string]bool, r *Restart) {
	t.Helper()
	stepOf := map[string]Step{}
	anyState := false
	for _, s := range r.Steps {
		if _, dup := stepOf[s.Store]; dup {
			t.Errorf("%s starts twice", s.Store)
		}
		stepOf[s.Store] = s
		anyState = anyState || s.HasState
	}
	for _, ref := range d.StoresOn(host) {
		s, ok := stepOf[ref.Store.Name]
		if !ok {
			t.Errorf("%s of host %s is never started", ref.Store.Name, host)
			continue
		}
		if s.HasState != hasState[ref.Store.Name] {
			t.Errorf("%s: has_state %v, but it was given as %v", s.Store, s.HasState, hasState[ref.Store.Name])
		}
	}
	if len(stepOf) != len(d.StoresOn(host)) {
		t.Errorf("%d steps for %d stores of host %s", len(stepOf), len(d.StoresOn(host)), host)
	}
	for _, s := range r.Steps {
		switch {
		case s.HasState && (s.Number != 1 || s.WaitsFor != "" || s.ReadyWhen != ReadyRunning):
			t.Errorf("%s kept its state: it must start in step 1 at once and be ready when running, got %+v", s.Store, s)
		case !s.HasState && anyState && s.Number == 1:
			t.Errorf("%s is empty but starts in step 1 with the stores that kept their state", s.Store)
		case !s.HasState && s.ReadyWhen != ReadyCaughtUp:
			t.Errorf("%s is empty: it must be ready only once caught up, got %q", s.Store, s.ReadyWhen)
		}
		if s.WaitsFor == "" {
			continue
		}
		w, ok := stepOf[s.WaitsFor]
		switch {
		case !ok:
			t.Errorf("%s waits for %s, which the plan does not start", s.Store, s.WaitsFor)
		case w.Number >= s.Number:
			t.Errorf("%s (step %d) waits for %s, which starts in step %d", s.Store, s.Number, w.Store, w.Number)
		case w.ReadyWhen != s.WaitsUntil:
			t.Errorf("%s waits until %s is %s, but %s is ready when %s", s.Store, w.Store, s.WaitsUntil, w.Store, w.ReadyWhen)
		}
	}
	// A daemon may start a step as soon as what it waits for is ready, so
	// the waits alone must keep a group to one empty store catching up, and
	// hold an empty store back until its group has a member with state up.
	lastEmpty := map[int]string{}
	for _, s := range r.Steps {
		if s.HasState {
			continue
		}
		prev, seen := lastEmpty[s.Group]
		lastEmpty[s.Group] = s.Store
		if seen {
			if s.WaitsFor != prev || s.WaitsUntil != ReadyCaughtUp {
				t.Errorf("%s is the next empty store of group %d after %s: it must wait until %s has caught up, got %q/%q", s.Store, s.Group, prev, prev, s.WaitsFor, s.WaitsUntil)
			}
			continue
		}
		remoteState := slices.ContainsFunc(d.Members(s.Group), func(m StoreRef) bool {
			v, listed := hasState[m.Store.Name]
			return m.Store.Host != host && (!listed || v)
		})
		if remoteState {
			continue
		}
		w, ok := stepOf[s.WaitsFor]
		if !ok || !w.HasState || w.Group != s.Group || s.WaitsUntil != ReadyRunning {
			t.Errorf("%s: the only state of group %d is on host %s, so it must wait until a store with it is running, got %q/%q", s.Store, s.Group, host, s.WaitsFor, s.WaitsUntil)
		}
	}
	checkNoEmptyQuorum(t, d, host, hasState, r)
}
