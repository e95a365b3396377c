package placement

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSpecExampleRoundTrip(t *testing.T) {
	path := filepath.Join("testdata", "valid", "spec-example.yaml")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Marshal differs from the file it was loaded from:\n--- got\n%s--- want\n%s", got, want)
	}
	if d.Name != "demo" || len(d.Hosts) != 2 || len(d.Groups) != 2 {
		t.Errorf("unexpected content: %+v", d)
	}
}

func TestLoadDefaultsAndAccessors(t *testing.T) {
	d, err := Load(filepath.Join("testdata", "valid", "defaults-block-style.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if d.Stability != (Stability{Intragroup: "quorum", Intergroup: "any"}) {
		t.Errorf("stability defaults: got %+v", d.Stability)
	}
	var names []string
	for _, r := range d.StoresOn("left") {
		names = append(names, r.Store.Name)
	}
	if got := strings.Join(names, " "); got != "G1S1 G1S2 G2S1" {
		t.Errorf("StoresOn(left) = %s, want group order then store order", got)
	}
	r, ok := d.StoreByName("G1S1")
	if !ok {
		t.Fatal("StoreByName(G1S1) not found")
	}
	if got := r.RaftAddr(); got != "[::1]:7011" {
		t.Errorf("RaftAddr = %q, want [::1]:7011", got)
	}
	if got := r.ClientAddr(); got != "[::1]:8011" {
		t.Errorf("ClientAddr = %q, want [::1]:8011", got)
	}
	m := d.Members(2)
	if len(m) != 3 || m[2].ClientAddr() != "store-b.example.net:8023" || m[2].Group != 2 {
		t.Errorf("Members(2) = %+v", m)
	}
	if d.Members(3) != nil {
		t.Error("Members(3) should be nil for a missing group")
	}
	if _, ok := d.GroupByIndex(1); !ok {
		t.Error("GroupByIndex(1) not found")
	}
	if _, ok := d.HostByName("nope"); ok {
		t.Error("HostByName(nope) found")
	}
}

func TestWriteFileAtomicAndReloads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deployment.yaml")
	d := Dev("127.0.0.1", 14000)
	if err := d.WriteFile(path); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatalf("Load after WriteFile: %v", err)
	}
	if RenderLayout(back) != RenderLayout(d) {
		t.Error("reloaded deployment differs")
	}
	// An invalid deployment is not written and the old file stays.
	bad := Dev("127.0.0.1", 14000)
	bad.Groups[0].Stores = bad.Groups[0].Stores[:2]
	if err := bad.WriteFile(path); err == nil {
		t.Fatal("WriteFile wrote an invalid deployment")
	}
	if _, err := Load(path); err != nil {
		t.Errorf("old file damaged: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "umstored plan") {
		t.Errorf("got %v, want a not-exist error that points to umstored plan", err)
	}
}
