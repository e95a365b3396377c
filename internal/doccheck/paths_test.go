package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// notPaths are named in the docs on purpose although they are no file of
// this repository.
var notPaths = map[string]string{
	"SPEC.md":         "the product contract, kept beside the repository (../shared)",
	"UM-DOMAIN.md":    "Ultra Messaging's persistence model, kept beside the repository",
	"RAFT-NOTES.md":   "facts about hashicorp/raft, kept beside the repository",
	"damaged.json":    "a file a store writes into its data directory",
	"rejoin.json":     "likewise",
	"meta.json":       "a snapshot's metadata file, written by raft",
	"deployment.yaml": "the file umstored plan and dev write",
	"verdict.txt":     "a file the fault suite writes beside a failing schedule's logs",
	"run1.sh":         "a script of a past benchmark run, not kept",
	"FILE.top.txt":    "a file the bench writes beside its JSON",
	"filestore.go":    "nats-server's file store, in its own repository",
}

var (
	backticked = regexp.MustCompile("`([^`\n]+)`")
	linked     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fileName   = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(go|md|py|yaml|txt|sh)$`)
	pathLike   = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+/?$`)
)

// TestDocumentedPathsExist reads every tracked Markdown file and checks
// each path it names, in backticks or as a link: a path with a slash whose
// first part is a top-level entry of the repository must exist from the
// root or from the document's folder; a bare file name (fsm.go) must be the
// name of some tracked file.
func TestDocumentedPathsExist(t *testing.T) {
	root, files := tracked(t)
	top, names := map[string]bool{}, map[string]bool{}
	exists := map[string]bool{}
	for _, f := range files {
		exists[f] = true
		top[strings.SplitN(f, "/", 2)[0]] = true
		names[path.Base(f)] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			exists[d] = true
		}
	}
	for _, doc := range files {
		if !strings.HasSuffix(doc, ".md") {
			continue
		}
		text, err := os.ReadFile(root + "/" + doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, ref := range references(line) {
				if why := missing(ref, path.Dir(doc), exists, top, names); why != "" {
					t.Errorf("%s:%d names %q, %s", doc, i+1, ref, why)
				}
			}
		}
	}
}

// references returns the candidate paths of one line.
func references(line string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{backticked, linked} {
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			ref := m[1]
			if strings.Contains(ref, "://") || strings.HasPrefix(ref, "#") {
				continue
			}
			ref, _, _ = strings.Cut(ref, "#")
			ref = strings.TrimSuffix(ref, ":")
			if i := strings.Index(ref, ".go:"); i >= 0 {
				ref = ref[:i+3] // file.go:123
			}
			out = append(out, ref)
		}
	}
	return out
}

// missing says why ref, named in a document in dir, names no file of the
// repository, or "" if it does or is no path.
func missing(ref, dir string, exists, top, names map[string]bool) string {
	if _, ok := notPaths[ref]; ok {
		return ""
	}
	switch {
	case fileName.MatchString(ref):
		if !names[ref] {
			return "a file name no tracked file has"
		}
	case pathLike.MatchString(ref):
		p := strings.TrimSuffix(ref, "/")
		if !top[strings.SplitN(p, "/", 2)[0]] && !exists[path.Join(dir, p)] {
			return "" // not a path of this repository (an import path, a host path)
		}
		if !exists[p] && !exists[path.Join(dir, p)] {
			return "a path that does not exist (from the root or from the document's folder)"
		}
	}
	return ""
}

// tracked returns the repository's root and its tracked files.
func tracked(t *testing.T) (string, []string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	root := string(bytes.TrimSpace(out))
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return root, strings.Fields(string(out))
}
