package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// firstRelease is the revision issue 29 names as umstore's first release.
const firstRelease = "7f489b3"

// TestReleasesNameCommits reads RELEASES: each line a release's name, its
// full revision and its date, oldest first, the first 7f489b3. Each
// revision must be a commit of this repository (the upgrade test builds
// it), and CHANGELOG.md must have a section for each release and for what
// is unreleased.
func TestReleasesNameCommits(t *testing.T) {
	root, _ := tracked(t)
	data, err := os.ReadFile(root + "/RELEASES")
	if err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile(root + "/CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	shallow, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output()
	var names []string
	var last time.Time
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || len(f[1]) != 40 {
			t.Errorf("RELEASES line %d: %q, want NAME REVISION(40 hex digits) DATE", i+1, line)
			continue
		}
		name, rev := f[0], f[1]
		date, err := time.Parse(time.DateOnly, f[2])
		if err != nil {
			t.Errorf("RELEASES line %d: date %q: %v", i+1, f[2], err)
		} else if date.Before(last) {
			t.Errorf("RELEASES line %d: %s is older than the release above it (oldest first)", i+1, f[2])
		}
		last = date
		if len(names) == 0 && !strings.HasPrefix(rev, firstRelease) {
			t.Errorf("the first release is %s, want %s", rev, firstRelease)
		}
		for _, n := range names {
			if n == name {
				t.Errorf("release %s named twice", name)
			}
		}
		names = append(names, name)
		if string(bytes.TrimSpace(shallow)) != "true" {
			if out, err := exec.Command("git", "-C", root, "cat-file", "-t", rev).Output(); err != nil || string(bytes.TrimSpace(out)) != "commit" {
				t.Errorf("release %s: %s is not a commit of this repository (%v)", name, rev, err)
			}
		}
		if !bytes.Contains(changelog, []byte("\n## "+name+" (")) {
			t.Errorf("CHANGELOG.md has no section \"## %s (...)\"", name)
		}
	}
	if len(names) == 0 {
		t.Fatal("RELEASES names no release")
	}
	if !bytes.Contains(changelog, []byte("\n## Unreleased")) {
		t.Error("CHANGELOG.md has no \"## Unreleased\" section")
	}
}
