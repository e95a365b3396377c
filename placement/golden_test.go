package placement

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the testdata/**/*.golden files from the current output")

// scenario is a planner request as written in testdata/scenarios/*.yaml.
type scenario struct {
	Name           string `yaml:"name"`
	Hosts          []Host `yaml:"hosts"`
	Groups         int    `yaml:"groups"`
	StoresPerGroup int    `yaml:"stores-per-group"`
	BasePort       int    `yaml:"base-port"`
}

func loadScenario(t *testing.T, path string) Request {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s scenario
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return Request(s)
}

// render is what the golden files hold: the layout, the failure analysis and
// the deployment file, or the refusal.
func render(d *Deployment, a *Analysis, err error) string {
	var b strings.Builder
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			return "unexpected error: " + err.Error() + "\n"
		}
		fmt.Fprintf(&b, "== refusal %s\n%s\n\n%s\n", r.Code, r.Error(), r.Explanation)
		return b.String()
	}
	data, merr := d.Marshal()
	if merr != nil {
		data = []byte(merr.Error())
	}
	fmt.Fprintf(&b, "== layout\n%s\n== analysis\n%s\n== deployment\n%s", RenderLayout(d), a.Render(), data)
	return b.String()
}

func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run `go test ./placement/ -run Golden -update` to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
}

func TestGoldenScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			d, a, err := Plan(loadScenario(t, path))
			if refused := strings.HasPrefix(name, "refuse-"); refused != (err != nil) {
				t.Errorf("refused=%v (err %v), but the scenario name says refused=%v", err != nil, err, refused)
			}
			if err == nil {
				// What the planner writes must load back unchanged.
				data, merr := d.Marshal()
				if merr != nil {
					t.Fatal(merr)
				}
				back, perr := Parse(data, name)
				if perr != nil {
					t.Fatalf("planned deployment does not load back: %v", perr)
				}
				again, _ := back.Marshal()
				if !bytes.Equal(data, again) {
					t.Error("marshal/parse round trip changed the deployment")
				}
			}
			checkGolden(t, strings.TrimSuffix(path, ".yaml")+".golden", render(d, a, err))
		})
	}
}

func TestGoldenDev(t *testing.T) {
	d := Dev("127.0.0.1", 14000)
	checkGolden(t, filepath.Join("testdata", "dev.golden"), render(d, Analyze(d), nil))
}
