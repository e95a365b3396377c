package placement

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
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
		{"an operator token alone is a security section", func(d *Deployment) { d.Security = &Security{OperatorTokenFile: "operator.token"} }, nil},
		{"a token file that climbs out of the deployment's directory", func(d *Deployment) { d.Security = &Security{TokenFile: "../home/x/.ssh/id_rsa"} },
			[]string{`security.token-file: "../home/x/.ssh/id_rsa" climbs out of the deployment file's directory`}},
		{"TLS files that climb out", func(d *Deployment) {
			d.Security = &Security{TLS: &TLS{CA: "ca.pem", Cert: "certs/../../host.pem", Key: "key.pem", ClientCert: "..", ClientKey: "k.pem"}}
		}, []string{`security.tls.cert: "certs/../../host.pem" climbs out`, `security.tls.client-cert: ".." climbs out`}},
		{"files below the deployment's directory and absolute ones", func(d *Deployment) {
			d.Security = &Security{TokenFile: "secrets/token", OperatorTokenFile: "/etc/umstore/operator.token", MemberSecretFile: "a/../demo.member-secret"}
		}, nil},
		{"an empty security section", func(d *Deployment) { d.Security = &Security{} },
			[]string{"security: is empty; give member-secret-file, tls (ca, cert, key), token-file and/or operator-token-file"}},
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
