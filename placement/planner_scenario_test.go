package placement

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPlannerScenarios drives the planner and the failure analysis from the
// files in the top-level testdata/planner. Directives:
//
//	plan hosts=A,B groups=2 stores-per-group=3 [base-port=N] [name=NAME]
//	     [intergroup=B] [intragroup=B] [file] [json] [render]
//
// asks Plan for the layout and prints which store runs where on which ports
// and what losing each host does, or the refusal with its explanation.
// intergroup and intragroup re-analyse the planned deployment under other
// behaviours; file adds the deployment file; json adds the analysis as
// `umstored plan --json` prints it; render adds it as people read it.
//
//	analyze hosts=A,B groups=1 [move=(G2S2=A)] [idle-hosts=(C)] [intergroup=B]
//
// lays the stores out as the planner would but without its refusals, moves
// stores or adds idle hosts if asked, and prints the failure analysis: the
// way to look at a layout the planner refuses, or one written by hand.
//
// See scenario_test.go for the arguments. Rewrite the expected outputs with
// `go test ./placement -run Scenarios -rewrite` and review the diff.
func TestPlannerScenarios(t *testing.T) {
	datadriven.Walk(t, "../testdata/planner", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "plan":
				return runPlan(t, d)
			case "analyze":
				req := scenarioRequest(t, d).withDefaults()
				dep := layout(req.Name, req.Hosts, req.Groups, req.StoresPerGroup, req.BasePort)
				adjust(t, d, dep)
				var b strings.Builder
				if err := dep.Validate(); err != nil {
					fmt.Fprintf(&b, "invalid deployment: %v\n", err)
				}
				writeLayout(&b, dep)
				writeAnalysis(&b, Analyze(dep))
				return b.String()
			default:
				d.Fatalf(t, "unknown command %q (want plan or analyze)", d.Cmd)
				return ""
			}
		})
	})
}

func runPlan(t *testing.T, d *datadriven.TestData) string {
	dep, a, err := Plan(scenarioRequest(t, d))
	if err != nil {
		if dep != nil || a != nil {
			t.Error("a refusal must return no deployment and no analysis")
		}
		var r *Refusal
		if !errors.As(err, &r) {
			return fmt.Sprintf("error (not a refusal): %v\n", err)
		}
		if r.Reason == "" || r.Explanation == "" {
			t.Errorf("refusal %s: reason %q explanation %q, both must be set", r.Code, r.Reason, r.Explanation)
		}
		return fmt.Sprintf("%s\ncode: %s\nmatches: %s\n\n%s\n", r.Error(), r.Code, sentinelNames(err), r.Explanation)
	}
	checkPlanned(t, dep)
	if d.HasArg("intergroup") || d.HasArg("intragroup") {
		if d.HasArg("intergroup") {
			d.ScanArgs(t, "intergroup", &dep.Stability.Intergroup)
		}
		if d.HasArg("intragroup") {
			d.ScanArgs(t, "intragroup", &dep.Stability.Intragroup)
		}
		a = Analyze(dep)
	}
	var b strings.Builder
	writeLayout(&b, dep)
	writeAnalysis(&b, a)
	if d.HasArg("file") {
		data, err := dep.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "deployment file:\n%s", data)
	}
	if d.HasArg("render") {
		fmt.Fprintf(&b, "render:\n%s", a.Render())
	}
	if d.HasArg("json") {
		data, err := json.MarshalIndent(a, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "json:\n%s\n", data)
	}
	return b.String()
}

// checkPlanned holds what every planned deployment must satisfy, whatever
// the expected output says: it is valid, complete (defaults filled) and
// survives a write and a read unchanged.
func checkPlanned(t *testing.T, d *Deployment) {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Errorf("planned deployment is invalid: %v", err)
	}
	if d.Stability != d.Stability.WithDefaults() {
		t.Errorf("planned deployment lacks its defaults: %+v", d.Stability)
	}
	data, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, "planned")
	if err != nil {
		t.Fatalf("planned deployment does not load back: %v", err)
	}
	if again, _ := back.Marshal(); !bytes.Equal(data, again) {
		t.Error("marshal/parse round trip changed the planned deployment")
	}
}

// writeLayout prints the layout drawing and every store's host and ports.
func writeLayout(b *strings.Builder, d *Deployment) {
	fmt.Fprintf(b, "deployment %q, intergroup %s\n", d.Name, d.Stability.Intergroup)
	for line := range strings.Lines(RenderLayout(d)) {
		b.WriteString("  " + line)
	}
	for _, r := range d.Stores() {
		fmt.Fprintf(b, "%s: group %d, host %s, raft %s, client %s\n",
			r.Store.Name, r.Group, r.Host.Name, r.RaftAddr(), r.ClientAddr())
	}
}

// writeAnalysis prints every field of the failure analysis, one host loss
// at a time.
func writeAnalysis(b *strings.Builder, a *Analysis) {
	for _, loss := range a.HostLosses {
		stopped := "nothing"
		if len(loss.StoresLost) > 0 {
			stopped = strings.Join(loss.StoresLost, " ")
		}
		fmt.Fprintf(b, "lose %s: stops %s\n", loss.Host, stopped)
		for _, g := range loss.Groups {
			state := "quorum"
			if !g.HasQuorum {
				state = "no quorum"
			}
			if g.Confirms != nil {
				state += fmt.Sprintf(", confirms under intragroup %s: %t", a.Intragroup, *g.Confirms)
			}
			fmt.Fprintf(b, "  group %d: %d of %d left, needs %d: %s\n", g.Group, g.StoresLeft, g.Stores, g.Quorum, state)
		}
		fmt.Fprintf(b, "  with quorum %v, without %v\n", loss.GroupsWithQuorum, loss.GroupsWithoutQuorum)
		var per []string
		for _, beh := range IntergroupBehaviours {
			per = append(per, fmt.Sprintf("%s %s", beh, goesOn(loss.Publishing.Under(beh))))
		}
		fmt.Fprintf(b, "  publishing: %s; under %s it %s\n", strings.Join(per, ", "), a.Intergroup, goesOn(loss.PublishingGoesOn))
	}
	fmt.Fprintf(b, "survives any host loss under %s: %t\n", a.Intergroup, a.SurvivesAnyHostLoss)
	for _, w := range a.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
}
