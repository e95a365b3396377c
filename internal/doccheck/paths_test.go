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
	"replication.go":  "hashicorp/raft's, named in chaos/logscan.go beside the messages it logs",
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
// name of a tracked file in the document's package (its folder and those
// below, a testdata folder counting as its package's) or, for the
// documents at the root and under docs/, anywhere.
func TestDocumentedPathsExist(t *testing.T) {
	root, files := tracked(t)
	r := newRepo(files)
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
				if why := r.missing(ref, doc); why != "" {
					t.Errorf("%s:%d names %q, %s", doc, i+1, ref, why)
				}
			}
		}
	}
}

// goFileInComment is a bare Go file name in a comment: "(publish.go)",
// "clientserver's intragroup.go", not "storegroup/open.go" (a path, which
// the Markdown rule would read the same way) nor "foo.go.orig".
var goFileInComment = regexp.MustCompile(`(?:^|[^\w./-])([A-Za-z0-9_]+\.go)\b`)

// TestCommentedFileNamesExist checks the Go file names that comments
// name: each must be the name of a tracked file somewhere in the
// repository. A comment often names a file of another package ("raftport's
// progress.go"), so the rule cannot ask for the comment's own package; it
// still catches a file renamed or moved away whose old name nothing has.
func TestCommentedFileNamesExist(t *testing.T) {
	root, files := tracked(t)
	r := newRepo(files)
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasPrefix(f, "internal/doccheck/") {
			continue // this package's comments name examples of the rule
		}
		text, err := os.ReadFile(root + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			_, comment, ok := strings.Cut(line, "//")
			if !ok {
				continue
			}
			for _, m := range goFileInComment.FindAllStringSubmatch(comment, -1) {
				if _, ok := notPaths[m[1]]; !ok && !r.names[m[1]] {
					t.Errorf("%s:%d names %q, a file name no tracked file has", f, i+1, m[1])
				}
			}
		}
	}
}

// repo is what the rules look paths up in.
type repo struct {
	exists map[string]bool // tracked files and their folders
	top    map[string]bool // the root's entries
	names  map[string]bool // the base names of tracked files
	files  []string
}

func newRepo(files []string) *repo {
	r := &repo{exists: map[string]bool{}, top: map[string]bool{}, names: map[string]bool{}, files: files}
	for _, f := range files {
		r.exists[f] = true
		r.top[strings.SplitN(f, "/", 2)[0]] = true
		r.names[path.Base(f)] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.exists[d] = true
		}
	}
	return r
}

// scope is the folder whose files a document's bare file names must be
// in: its package's, or "" (anywhere) for the root's and docs/'s.
func scope(doc string) string {
	dir := path.Dir(doc)
	if i := strings.Index(dir+"/", "/testdata/"); i >= 0 {
		dir = dir[:i]
	} else if dir == "testdata" {
		dir = "."
	}
	if dir == "." || dir == "docs" || strings.HasPrefix(dir, "docs/") {
		return ""
	}
	return dir
}

// hasUnder says whether a tracked file called name is in dir or below it.
func (r *repo) hasUnder(dir, name string) bool {
	for _, f := range r.files {
		if path.Base(f) == name && strings.HasPrefix(f, dir+"/") {
			return true
		}
	}
	return false
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

// missing says why ref, named in doc, names no file of the repository,
// or "" if it does or is no path.
func (r *repo) missing(ref, doc string) string {
	if _, ok := notPaths[ref]; ok {
		return ""
	}
	dir := path.Dir(doc)
	switch {
	case fileName.MatchString(ref):
		if !r.names[ref] {
			return "a file name no tracked file has"
		}
		if s := scope(doc); s != "" && !r.hasUnder(s, ref) {
			return "a file name no tracked file of " + s + "/ has"
		}
	case pathLike.MatchString(ref):
		p := strings.TrimSuffix(ref, "/")
		if !r.top[strings.SplitN(p, "/", 2)[0]] && !r.exists[path.Join(dir, p)] {
			return "" // not a path of this repository (an import path, a host path)
		}
		if !r.exists[p] && !r.exists[path.Join(dir, p)] {
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
