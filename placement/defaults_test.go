package placement

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFillDefaults: the defaults that Validate used to fill in are filled by
// FillDefaults, and keys already set are kept.
func TestFillDefaults(t *testing.T) {
	d := Dev("127.0.0.1", 14000)
	d.Stability = Stability{}
	d.FillDefaults()
	if d.Stability.Intragroup != IntragroupQuorum || d.Stability.Intergroup != IntergroupAny {
		t.Errorf("defaults not filled: %+v", d.Stability)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	d.Stability = Stability{Intergroup: IntergroupAll}
	d.FillDefaults()
	if d.Stability != (Stability{Intragroup: IntragroupQuorum, Intergroup: IntergroupAll}) {
		t.Errorf("a set behaviour was overwritten: %+v", d.Stability)
	}
}

// TestValidateIsPure: Validate never changes the deployment, whether it
// accepts it (empty stability stands for the defaults) or refuses it.
func TestValidateIsPure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(d *Deployment)
		valid  bool
	}{
		{"empty stability", func(d *Deployment) { d.Stability = Stability{} }, true},
		{"empty intergroup only", func(d *Deployment) { d.Stability.Intergroup = "" }, true},
		{"empty stability and a bad port", func(d *Deployment) {
			d.Stability = Stability{}
			d.Groups[0].Stores[0].RaftPort = 0
		}, false},
		{"bad behaviours", func(d *Deployment) { d.Stability = Stability{Intragroup: "all", Intergroup: "most"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Dev("127.0.0.1", 14000)
			tc.change(d)
			before := Dev("127.0.0.1", 14000)
			tc.change(before)
			err := d.Validate()
			if (err == nil) != tc.valid {
				t.Fatalf("valid=%v, want %v (err %v)", err == nil, tc.valid, err)
			}
			if !reflect.DeepEqual(d, before) {
				t.Errorf("Validate changed the deployment:\n got %+v\nwant %+v", d, before)
			}
		})
	}
}

// TestWriteFileFillsDefaultsInTheFile: a deployment built in code with an
// empty stability block is written with the defaults, as when Validate
// filled them, and the caller's value is left as it was.
func TestWriteFileFillsDefaultsInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	d := Dev("127.0.0.1", 14000)
	d.Stability = Stability{}
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if d.Stability != (Stability{}) {
		t.Errorf("WriteFile changed the caller's deployment: %+v", d.Stability)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Dev("127.0.0.1", 14000).Marshal()
	if !bytes.Equal(data, want) {
		t.Errorf("written file:\n%s\nwant\n%s", data, want)
	}
}
