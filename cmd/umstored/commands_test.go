package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/internal/testports"
	"umstore/placement"
	"umstore/repository"
	"umstore/storegroup"
)

// silentDeployment writes the dev topology on loopback ports where nothing
// listens (ports that were free a moment ago) and returns its path.
func silentDeployment(t *testing.T) (string, *placement.Deployment) {
	t.Helper()
	d := placement.Dev("127.0.0.1", 14000)
	pick := func() int { return testports.Port(t) }
	for gi := range d.Groups {
		for si := range d.Groups[gi].Stores {
			d.Groups[gi].Stores[si].RaftPort = pick()
			d.Groups[gi].Stores[si].ClientPort = pick()
		}
	}
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path, d
}

// With no store answering, status says every store is down and publishing
// is not possible (exit 1), in its table and in its JSON.
func TestStatusNothingAnswers(t *testing.T) {
	path, _ := silentDeployment(t)
	var out, errOut bytes.Buffer
	if code := cmdStatus([]string{"--deployment", path, "--timeout", "500ms", "--json"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errOut.String())
	}
	var st struct {
		Deployment string `json:"deployment"`
		Intergroup string `json:"intergroup"`
		Groups     []struct {
			Index   int    `json:"index"`
			Leader  string `json:"leader"`
			Sources []any  `json:"sources"`
			Stores  []struct {
				Name, State, Error string
			} `json:"stores"`
		} `json:"groups"`
		Publishing bool   `json:"publishing"`
		Reason     string `json:"reason"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if st.Deployment != "dev" || st.Intergroup != "any" || st.Publishing || st.Reason != "0 of 2 groups have a leader; intergroup any needs at least 1" || len(st.Groups) != 2 {
		t.Fatalf("status: %+v", st)
	}
	for _, g := range st.Groups {
		if g.Leader != "" || g.Sources != nil || len(g.Stores) != 3 {
			t.Errorf("group %d: %+v", g.Index, g)
		}
		for _, s := range g.Stores {
			if s.State != "down" || s.Error == "" {
				t.Errorf("%s: %q (%s), want down with the reason", s.Name, s.State, s.Error)
			}
		}
	}

	out.Reset()
	if code := cmdStatus([]string{"--deployment", path, "--timeout", "500ms"}, &out, &errOut); code != 1 {
		t.Fatalf("table: exit %d", code)
	}
	for _, want := range []string{"GROUP  STORE  HOST  ADDRESS", "  down  ", "group 2 leader: none", "publishing: NOT possible (0 of 2 groups have a leader; intergroup any needs at least 1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

// A store that does not answer counts as stopped; --host keeps one host's.
func TestStopNothingRuns(t *testing.T) {
	path, _ := silentDeployment(t)
	var out, errOut bytes.Buffer
	if code := cmdStop([]string{"--deployment", path, "--host", "B", "--timeout", "2s"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	want := "stopped G1S3 (group 1, host B)\nstopped G2S2 (group 2, host B)\nstopped G2S3 (group 2, host B)\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if code := cmdStop([]string{"--deployment", path, "--host", "Z"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `no host "Z"`) {
		t.Errorf("unknown host: exit %d, %s", code, errOut.String())
	}
}

// recover lists a store's backups, promotes one (keeping what the store
// held in a new backup) and accepts a loss, while no store runs.
func TestRecoverCommands(t *testing.T) {
	path, _ := silentDeployment(t)
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "G1S3") // host B's store of group 1
	writeRepo := func(id string, applied uint64) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		r, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Apply([]repository.Entry{{Index: applied, Term: 1, Data: repository.EncodeInitGroup(repository.InitGroup{GroupID: id, Index: 1})}}); err != nil {
			t.Fatal(err)
		}
	}
	writeRepo("old", 40)
	backup, err := storegroup.BackupDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRepo("new", 2)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cmdRecover(append([]string{"--deployment", path, "--host", "B", "--data-dir", dataDir, "--group", "1"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run("--list")
	if code != 0 || !strings.Contains(out, backup) || !strings.Contains(out, " old ") || !strings.Contains(out, " new ") {
		t.Fatalf("--list: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run("--promote", filepath.Join(dataDir, "nope")); code != 2 || !strings.Contains(errOut, "is not a backup of a store of this group on this host") {
		t.Errorf("--promote of no backup: exit %d, %s", code, errOut)
	}
	code, out, errOut = run("--promote", backup)
	if code != 0 || !strings.Contains(out, "moved the current content of G1S3 to "+dir+".bak.0002") || !strings.Contains(out, "store G1S3 now holds group old (applied index 40)") {
		t.Fatalf("--promote: exit %d\n%s%s", code, out, errOut)
	}
	if c, err := storegroup.InspectDataDir(dir); err != nil || c.GroupID != "old" {
		t.Errorf("after --promote the store holds %+v (%v)", c, err)
	}
	code, out, errOut = run("--accept-loss")
	if _, err := os.Stat(filepath.Join(dir, "accept-loss")); code != 0 || err != nil || !strings.Contains(out, "group 1 will start empty") {
		t.Errorf("--accept-loss: exit %d (%v)\n%s%s", code, err, out, errOut)
	}
}
