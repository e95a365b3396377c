package placement

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestInvalidFiles loads every file in testdata/invalid and checks that the
// error contains each of the file's "# want:" lines (file, line, key path).
func TestInvalidFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
					wants = append(wants, w)
				}
			}
			if len(wants) == 0 {
				t.Fatal("file has no # want: line")
			}
			d, err := Parse(data, filepath.Base(path))
			if err == nil {
				t.Fatalf("accepted: %+v", d)
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestValidateInCode(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *Deployment)
		want   []string // substrings of the error; nil means valid
	}{
		{"dev is valid", func(d *Deployment) {}, nil},
		{"empty stability gets defaults", func(d *Deployment) { d.Stability = Stability{} }, nil},
		{"each intergroup behaviour", func(d *Deployment) { d.Stability.Intergroup = "all-active" }, nil},
		{"unknown host", func(d *Deployment) { d.Groups[1].Stores[2].Host = "C" },
			[]string{`groups[1].stores[2].host: unknown host "C"`}},
		{"no line without a file", func(d *Deployment) { d.Version = 0 },
			[]string{`version: missing`}},
		{"port collision across hosts with one address", func(d *Deployment) { d.Groups[1].Stores[2].RaftPort = 14011 },
			[]string{`groups[1].stores[2].raft-port: port 14011 on 127.0.0.1 is already used by groups[0].stores[0].raft-port`}},
		{"same IP spelt twice", func(d *Deployment) {
			d.Hosts[0].Address = "::1"
			d.Hosts[1].Address = "0:0::1"
			d.Groups[1].Stores[2].RaftPort = 14011
		}, []string{`groups[1].stores[2].raft-port: port 14011 on ::1 is already used`}},
		{"no hosts no groups", func(d *Deployment) { d.Hosts = nil; d.Groups = nil },
			[]string{"hosts: no hosts", "groups: no groups"}},
		{"empty names", func(d *Deployment) { d.Hosts[0].Name = ""; d.Groups[0].Stores[0].Name = "" },
			[]string{"hosts[0].name: missing", "groups[0].stores[0].name: missing"}},
		{"port zero and negative", func(d *Deployment) {
			d.Groups[0].Stores[0].RaftPort = 0
			d.Groups[0].Stores[0].ClientPort = -1
		}, []string{"groups[0].stores[0].raft-port: missing", "groups[0].stores[0].client-port: -1 is not a TCP port"}},
		{"group index zero", func(d *Deployment) { d.Groups[0].Index = 0 }, []string{"groups[0].index: missing; groups are numbered 1..2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Dev("127.0.0.1", 14000)
			tt.change(d)
			err := d.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path == "" {
				t.Errorf("error is not a *FieldError with a path: %#v", err)
			}
			if strings.Contains(err.Error(), "line ") {
				t.Errorf("a deployment built in code has no lines, got: %v", err)
			}
		})
	}
}

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
